"""Train the hate gate from data files and write its model card (the category model, which reads
the gate's states, is trained in train_category.py).

    rebuttal learned train-gate --data-root ../shared/data --out DIR
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import numpy as np

from rebuttal.learned.calibration import (FPR_BUDGET, calibrate, evaluation_lines, functionality_folds,
                                          summarise_grouped)
from rebuttal.learned.gate import (HateGate, LanguageGate, blended, pooled_states, shared_reader,
                                   train_language_gate, train_states_gate)
from rebuttal.learned.text import sigmoid

LICENCE_NOTE = (
    "The weights are small models (linear models, or a 0.2M-weight head over MiniLM token states); no "
    "training text is stored in them. They are derived from "
    "data whose licences restrict use to research (see the data sources below); use them for "
    "research and non-commercial moderation support, or retrain on data you hold."
)


_VECTORS: dict[str, np.ndarray] = {}  # a blend's linear half and the fallback read the same texts


def minilm_vectors(texts: list[str]) -> np.ndarray:
    from rebuttal.llm.embeddings import load_minilm

    if missing := [t for t in dict.fromkeys(texts) if t not in _VECTORS]:
        _VECTORS.update(zip(missing, load_minilm().encode(missing)))
    return np.stack([_VECTORS[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)


HEAD_PER_SOURCE = 1500  # the token head reads 48 token states per text: a smaller corpus sample
# The English states gate reads each text through half the chat model (~0.3 s): 500 rows per source
# and label beside the HateCheck dev half that carries the negations, quotes and neutral mentions,
# and every silver train post (7,295 texts, ~40 min once; cached). The silver posts are the hate
# FIRE exists for: with 500 of them the gate left 16 of the 104 hateful silver dev round-1 posts
# unanswered, with all 3,862 it leaves 7, at the same HateCheck held-out FPR (0.123; recall 0.912).
# Chosen on silver dev round 1 among three variants (C 0.003 or silver rows at half weight: 8 left).
EN_STATES_PER_SOURCE = 1500  # 500 until 2026-12-07: on the real-post dev slice AUC 0.807 -> 0.840 (states alone)
EN_STATES_WHOLE = ("silver",)
EN_STATES_KINDS = {("en", "states"), ("en", "blend")}
# The Chinese gate's features: the chat model after 14 of its 28 layers, first 64 tokens. Chosen
# on template-held-out folds of HateCheck zh dev (exploration on whole posts, FPR at 90% recall: C 0.001
# 0.24, C 0.01 0.32; a token head over the same states 0.32; character n-grams 0.66). English uses
# the same settings, not re-tuned (held-out FPR 0.098 at recall 0.90, MiniLM + n-grams 0.47;
# HateCheck weight 1-2 or C 0.01 called 1-4 more silver dev posts hateful at FPR 0.11-0.15;
# adding the MiniLM vector or averaging with the linear gate called none more). Tried since and
# worse (2026-12-04, same folds, FPR at 90% recall en / zh): adding max-pooling 0.12 / 0.29 against
# 0.10 / 0.24; an attention-pooled probe (en) 0.18; the last state after a stance question appended
# to the text (zh) 0.34, beside mean + last 0.25; layer 20 (zh, with the rejections) 0.15-0.17 but
# worse on held-out STATE-ToxiCN posts (AUC 0.811-0.817 against 0.829; gate_zh.md).
STATES = {"model": "qwen2.5-1.5b", "layers": 14, "max_tokens": 64}
STATES_C = 0.001
HATECHECK_WEIGHT = 3.0  # HateCheck rows count thrice: they carry the negations, quotes and neutral mentions
# Tried 2026-12-05 on functionality-held-out folds and held-out real posts (gate_folds.md; linear gates only,
# no states cache on that machine): HateCheck x3, per-functionality weights, a slur column (fire/slurs.py's
# list), slurs + per-functionality: mean fold recall 0.907-0.910 against 0.908, FPR 0.561-0.568 against
# 0.547; real-post recall 0.598-0.622 against 0.630. None shipped.
REAL_POSTS_PER_SOURCE = 100  # held-out real posts a trained gate is scored on, per source and label (issue 47)
DEV_POSTS_PER_SOURCE = 150  # real-post dev slice rows, per source and label: a blend's cut is chosen on them
# The English gate since 2026-12-07: the states gate's logit blended with the linear gate's (trained
# on up to 6,000 posts per source and label), cut on the real-post dev slice at FPR 0.175 (a margin
# under issue 47's 0.20). The weight maximised the mean of two dev recalls, the dev slice's at FPR
# 0.175 and the functionality-held-out HateCheck folds' at FPR 0.15 (pooled): states alone 0.701 /
# 0.760, linear alone 0.742 / 0.578, 0.5 each 0.780 / 0.740 (0.3-0.7: 0.724-0.760). The held-out
# slice was not read for it. The LLM's stance vote is no help on real posts (a scratch run on 133 dev-corpus posts,
# 2026-12-07 session note): it called 30 of 60 human counter-speech replies and 38 of 60 non-hateful Gab posts attacks.
BLEND_WEIGHT = 0.5
REAL_FPR_BUDGET = 0.175


def train_gate(root: str | Path, out: str | Path, *, c: float = 4.0, recall_target: float = 0.9,
               max_fpr: float = 0.15, fpr_budget: float = FPR_BUDGET, english: str = "blend",
               chinese: str = "states", keep: HateGate | None = None) -> HateGate:
    """One gate per language on the labelled corpora plus the HateCheck dev half, its cuts set
    by `calibrate` from template-held-out folds of HateCheck dev (a template never sits in train
    and test of the same fold), or for a blend from the real-post dev slice. Each language's kind:
    "blend" (the chat model's states blended with a linear gate on the whole corpus, which is also
    the fallback), "states" (the chat model's states; a linear fallback is trained too), "linear",
    or (English) "head" (token head, gate_head.py). The
    languages of `keep` (a gate, e.g. `HateGate.only(["en"])`) are copied, not trained again."""
    from rebuttal.learned import datasets

    root = Path(root)
    gates, fallbacks = (dict(keep.gates), dict(keep.fallbacks)) if keep else ({}, {})
    kept = keep.meta["languages"] if keep else {}
    info = {lang: {"kept": keep.meta.get("trained", "")} | kept[lang] for lang in kept}  # a kept gate's own date stays
    builders = {"linear": _linear_gate, "head": _head_gate, "states": _states_gate}
    for lang, kind in (("en", english), ("zh", chinese)):
        if lang in kept:
            continue
        corpus = datasets.gate_corpus(root, lang, **_corpus_sample(lang, kind))
        hatecheck = datasets.hatecheck(root, lang)
        rows = (corpus, hatecheck, datasets.real_posts_sample(root, lang, REAL_POSTS_PER_SOURCE),
                datasets.real_dev_sample(root, lang, DEV_POSTS_PER_SOURCE))
        cuts = (recall_target, max_fpr, fpr_budget)
        if kind == "blend":  # the linear half reads the whole corpus (milliseconds a text), the states half a sample
            linear = (datasets.gate_corpus(root, lang), *rows[1:])
            fallbacks[lang], info_linear = _calibrated(_linear_gate, *linear, lang, c, *cuts)
            gates[lang], info[lang] = _calibrated(_blend_builder(linear[0], BLEND_WEIGHT), *rows, lang, c, *cuts,
                                                  real_fpr_budget=REAL_FPR_BUDGET)
            gates[lang].partner = fallbacks[lang]
            info[lang]["fallback"] = info_linear | {"sources": dict(Counter(r.source.split(":")[0] for r in linear[0] + hatecheck))}
        else:
            gates[lang], info[lang] = _calibrated(builders[kind], *rows, lang, c, *cuts)
        info[lang]["sources"] = dict(Counter(r.source.split(":")[0] for r in corpus + hatecheck))
        if kind == "states":  # for machines without the embedded model
            fallbacks[lang], info[lang]["fallback"] = _calibrated(_linear_gate, *rows, lang, c, *cuts)
    gate = HateGate(gates, {"c": c, "recall_target": recall_target, "max_fpr": max_fpr, "fpr_budget": fpr_budget,
                            "trained": time.strftime("%Y-%m-%d"), "languages": dict(sorted(info.items()))}, fallbacks)
    out = Path(out)
    gate.save(out / "gate.npz")
    (out / "gate_card.md").write_text(gate_card(gate), encoding="utf-8")
    return gate


def _corpus_sample(lang: str, kind: str) -> dict:
    if kind == "head":
        return {"per_source": HEAD_PER_SOURCE}
    return {"per_source": EN_STATES_PER_SOURCE, "whole": EN_STATES_WHOLE} if (lang, kind) in EN_STATES_KINDS else {}


def _calibrated(build, corpus, hatecheck, real, dev, lang, c, recall_target, max_fpr, fpr_budget,
                real_fpr_budget: float | None = None) -> tuple[LanguageGate, dict]:
    """A gate from `build` and what it records: its template-held-out and functionality-held-out
    HateCheck scores, and the scores of held-out real posts `real` and of the real-post dev slice
    `dev` (trained on everything else). With `real_fpr_budget` its cut is chosen on `dev`."""
    gate, fit_score = build(corpus, hatecheck, real + dev, lang, c)
    n = len(corpus) + len(hatecheck)
    grouped = held_out_scores(corpus, hatecheck, fit_score, split=functionality_folds(hatecheck))
    posts = fit_score(np.arange(n), n + np.arange(len(real) + len(dev))) if real + dev else []
    info = {"model": gate.kind, "records": n, "states": gate.states,
            "held_out_scores": _rounded(held_out_scores(corpus, hatecheck, fit_score)),
            "grouped_scores": _rounded(grouped), "real_fpr_budget": real_fpr_budget}
    for key, rows, scores in (("real_posts", real, posts[:len(real)]), ("dev_posts", dev, posts[len(real):])):
        info[key] = {"scores": _rounded(scores), "hateful": [r.hateful for r in rows], "sources": [r.source for r in rows]}
    calibrate(gate, info, [r.hateful for r in hatecheck], recall_target, max_fpr, fpr_budget)
    summarise_grouped(info, hatecheck, recall_target, fpr_budget)
    return gate, info


def recalibrate_gate(path: str | Path, root: str | Path, out: str | Path, *, recall_target: float = 0.9,
                     max_fpr: float = 0.15, fpr_budget: float = FPR_BUDGET,
                     thresholds: dict[str, float] | None = None) -> HateGate:
    """New cuts for a trained gate from the held-out scores it recorded: no retraining.
    `thresholds`: a language's threshold set by hand (its `sure` is raised to it if lower), e.g.
    a higher Chinese cut for real posts (benchmarks/results/gate_zh.md)."""
    from rebuttal.learned import datasets

    gate, thresholds = HateGate.load(path), thresholds or {}
    if unknown := set(thresholds) - set(gate.gates):
        raise ValueError(f"the gate has no language {', '.join(sorted(unknown))}; it has {', '.join(gate.gates)}")
    for lang, info in gate.meta["languages"].items():
        hatecheck = datasets.hatecheck(Path(root), lang)
        hateful = [r.hateful for r in hatecheck]
        info.pop("threshold_by_hand", None)  # an earlier hand-set cut is recalibrated too
        calibrate(gate.gates[lang], info, hateful, recall_target, max_fpr, fpr_budget)
        summarise_grouped(info, hatecheck, recall_target, fpr_budget)
        if lang in gate.fallbacks:
            calibrate(gate.fallbacks[lang], info["fallback"], hateful, recall_target, max_fpr, fpr_budget)
        if lang in thresholds:
            one = gate.gates[lang]
            one.threshold, one.sure = thresholds[lang], max(one.sure, thresholds[lang])
            info.update(threshold=one.threshold, sure=one.sure, threshold_by_hand=True)
    gate.meta.update(recall_target=recall_target, max_fpr=max_fpr, fpr_budget=fpr_budget,
                     calibrated=time.strftime("%Y-%m-%d"))
    out = Path(out)
    gate.save(out / "gate.npz")
    (out / "gate_card.md").write_text(gate_card(gate), encoding="utf-8")
    return gate


def _rounded(scores) -> list[float]:
    return [round(float(x), 4) for x in scores]


def held_out_scores(corpus, hatecheck, fit_score, folds: int = 5, split: list | None = None) -> np.ndarray:
    """Template-held-out scores of the HateCheck cases (or held out by `split`, the test indices
    of each fold, e.g. `functionality_folds`). `fit_score(train, held)` trains on the rows `train`
    of corpus + hatecheck (index arrays) and returns scores for the rows `held`."""
    from sklearn.model_selection import GroupKFold

    scores, n, every = np.zeros(len(hatecheck)), len(corpus), np.arange(len(hatecheck))
    if split is None:
        split = [held for _, held in GroupKFold(folds).split(hatecheck, groups=[r.group for r in hatecheck])]
    for held_idx in split:
        scores[held_idx] = fit_score(np.r_[np.arange(n), n + np.setdiff1d(every, held_idx)], n + held_idx)
    return scores


def _linear_gate(corpus, hatecheck, real, lang, c):
    rows = corpus + hatecheck + real
    texts, labels = [r.text for r in rows], [r.hateful for r in rows]
    vectors = minilm_vectors(texts) if lang == "en" else None

    def fit(idx):
        return train_language_gate([texts[i] for i in idx], [labels[i] for i in idx], lang,
                                   None if vectors is None else vectors[idx], c)

    def fit_score(train, held):
        return fit(train).score([texts[i] for i in held], None if vectors is None else vectors[held], lang)

    return fit(np.arange(len(corpus) + len(hatecheck))), fit_score


def _head_gate(corpus, hatecheck, real, lang, c):
    from rebuttal.learned.gate_head import MAX_TOKENS, fit_head, head_probabilities
    from rebuttal.llm.embeddings import load_minilm

    rows, n = corpus + hatecheck + real, len(corpus) + len(hatecheck)
    states, mask = load_minilm().token_states([r.text for r in rows], MAX_TOKENS)
    labels = np.array([r.hateful for r in rows])

    def fit_score(train, held):
        return head_probabilities(fit_head(states[train], mask[train], labels[train]), states[held], mask[held])

    head = fit_head(states[:n], mask[:n], labels[:n])
    return LanguageGate(np.zeros(0, np.float32), 0.0, 0.5, uses_vectors=False, head=head), fit_score


def cached_pooled_states(spec: dict, texts: list[str], chunk: int = 200, reader=None) -> np.ndarray:
    """`pooled_states` of the reader `spec` names, kept by text in <cache>/gate-states/: training
    reads thousands of texts through half the chat model (0.2-0.4 s each), and training again
    (another recall target, another language's gate) should not read them twice. `reader`: one
    opened for `spec` with other settings (e.g. `states_reader(spec, threads=1)` beside another
    job)."""
    cache = _states_cache(spec)
    missing = uncached(spec, texts, cache)
    for start in range(0, len(missing), chunk):  # a shard per chunk: an interrupted training resumes
        part = missing[start:start + chunk]
        for text, features in zip(part, pooled_states(reader or shared_reader(**spec), part)):
            cache.put(text, features[None])
        cache.flush()
    return np.stack([cache.get(t)[0] for t in texts]) if texts else np.zeros((0, 0), np.float32)


def _states_cache(spec: dict):
    from rebuttal.config import cache_dir
    from rebuttal.llm.states import StateCache

    # One pooled row per text, full precision; "v2": the shards before StateCache had another layout.
    return StateCache(cache_dir() / "gate-states" / "v2-{model}-l{layers}-t{max_tokens}".format(**spec),
                      dtype=np.float32)


def uncached(spec: dict, texts: list[str], cache=None) -> list[str]:
    """The texts whose `spec` states are not in the gate-states cache yet (each once)."""
    cache = cache if cache is not None else _states_cache(spec)
    return list(dict.fromkeys(t for t in texts if cache.get(t) is None))


def states_reader(spec: dict, threads: int):
    """A reader of `spec`'s states on `threads` CPU threads (the shared one takes two)."""
    from rebuttal.learned.gate import READER_TOKENS, TokenLimit
    from rebuttal.llm.states import open_states

    reader = open_states(spec["model"], layers=spec["layers"], max_tokens=READER_TOKENS, threads=threads)
    return TokenLimit(reader, spec["max_tokens"])


def _states_gate(corpus, hatecheck, real, lang, c):
    rows = corpus + hatecheck + real
    features = cached_pooled_states(STATES, [r.text for r in rows])
    labels = np.array([r.hateful for r in rows])
    weights = np.where(np.arange(len(rows)) >= len(corpus), HATECHECK_WEIGHT, 1.0)

    def fit(idx):
        return train_states_gate(features[idx], labels[idx], weights[idx], STATES, STATES_C)

    def fit_score(train, held):
        gate = fit(train)
        return sigmoid(features[held] @ gate.coef + gate.intercept)

    return fit(np.arange(len(corpus) + len(hatecheck))), fit_score


def _blend_builder(linear_corpus: list, weight: float):
    """A builder of the states gate blended with a linear gate (`LanguageGate.blend`): the states
    half trains on its corpus sample, the linear half on `linear_corpus`, both on the same
    HateCheck rows, so a HateCheck case held out of one is held out of both."""
    def build(corpus, hatecheck, extra, lang, c):
        states, fit_states = _states_gate(corpus, hatecheck, extra, lang, c)
        _, fit_linear = _linear_gate(linear_corpus, hatecheck, extra, lang, c)
        n, shift = len(corpus), len(linear_corpus) - len(corpus)

        def fit_score(train, held):  # indices into corpus + hatecheck + extra; the linear half's corpus is longer
            assert np.all(held >= n), "a blend holds out HateCheck or extra rows only"
            linear_train = np.r_[np.arange(len(linear_corpus)), train[train >= n] + shift]
            return blended(fit_states(train, held), fit_linear(linear_train, held + shift), weight)

        states.blend = weight
        return states, fit_score

    return build


def gate_card(gate: HateGate) -> str:
    models = {"token head": "a token head (one 128-wide transformer layer) over frozen all-MiniLM-L6-v2 token "
                            "states (first 48 tokens)", "linear": "logistic regression",
              "model states": "logistic regression on the embedded chat model's hidden states (mean and last "
                              "token state, standardised)"}
    models["model states + linear"] = models["model states"]
    made = f"Trained {gate.meta.get('trained', '')} by `rebuttal learned train-gate`".replace("  ", " ")
    if "calibrated" in gate.meta:
        made += f"; cuts set {gate.meta['calibrated']} by `rebuttal learned calibrate-gate`"
    lines = ["# Hate gate", "", made + ".", ""]
    for lang, info in gate.meta["languages"].items():
        states = info.get("states")
        read = f" of {states['model']} after {states['layers']} layers, first {states['max_tokens']} tokens" if states else ""
        grams = "MiniLM vectors + word n-grams" if lang == "en" else "character n-grams"
        fallback = (f" (fallback when that model is not installed: logistic regression on {grams}, "
                    "flagged `gate_fallback`)") if "fallback" in info else ""
        kept = f"; kept from the gate trained {info['kept']}" if "kept" in info else ""
        blend = gate.gates[lang].blend
        mixed = (f", its logit blended with the linear gate's (weight {1 - blend:.2f}; that gate is also the "
                 "fallback)") if blend is not None else ""
        lines.append(f"- {lang}: {models[info.get('model', 'linear')]}{read}{mixed}{fallback}{kept}")
    lines += ["", "Linear gates: MiniLM vectors + hashed word 1-2-grams (English), hashed character 1-3-grams "
              "(Chinese).", "", "## Data", ""]
    for lang, info in gate.meta["languages"].items():
        raised = ", raised to the threshold if below it" if info.get("threshold_by_hand") else ""
        chosen = ("set by hand with `calibrate-gate --threshold`" if info.get("threshold_by_hand") else
                  f"the lowest cut at which the real-post dev slice's non-hateful posts stay within "
                  f"{info['real_fpr_budget']}" if info.get("real_fpr_budget") is not None else
                  f"hateful recall >= {gate.meta['recall_target']} on template-held-out folds of the HateCheck dev "
                  f"half, lowered while non-hateful cases stay within {gate.meta.get('fpr_budget', 0.0)}")
        sure = ("the threshold: no band where the LLM's 'not hateful' vetoes a reply"
                if info.get("real_fpr_budget") is not None and not raised else
                f"held-out non-hateful cases at or above it <= {gate.meta['max_fpr']}{raised}: from there the LLM's "
                "'not hateful' no longer vetoes a reply")
        lines.append(f"- {lang}: {info['records']} texts from {json.dumps(info['sources'])}; threshold "
                     f"{info['threshold']:.2f} ({chosen}); sure {info['sure']:.2f} ({sure})")
        lines += evaluation_lines(info, "  - ")
        if "fallback" in info:
            read = f" ({info['fallback']['records']} texts from {json.dumps(info['fallback']['sources'])})" \
                if "sources" in info["fallback"] else ""
            lines.append(f"  - fallback{read}: threshold {info['fallback']['threshold']:.2f}, sure "
                         f"{info['fallback']['sure']:.2f}")
            lines += evaluation_lines(info["fallback"], "    - ")
    lines += ["", "Sources: implicit hate corpus (CC BY 4.0), ETHOS (GPL-3.0), Gab Hate Corpus (see its OSF page), "
              "human counter-speech from CONAN (research only) and CrowdCounter (MIT) as non-hateful examples, the "
              "silver FactualCS posts, STATE-ToxiCN (research only, non-commercial; its hateful claims also go into "
              "rule-made rejections, `state-toxicn-rejections`, as non-hateful rows), HateCheck and Multilingual "
              "HateCheck dev halves (CC BY 4.0). The chat model (Qwen2.5-Coder-1.5B-Instruct, Apache-2.0) is not "
              "part of the gate file; it is read at run time from the installed model.", "", "## Licence", "",
              LICENCE_NOTE, "", "Scores: benchmarks/results/gate.md."]
    return "\n".join(lines) + "\n"
