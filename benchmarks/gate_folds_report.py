"""The report of benchmarks/gate_folds.py: variants of the gate on functionality-held-out folds of
the HateCheck dev halves and on the held-out slice of real posts (benchmarks/results/gate_folds.md)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable

import numpy as np
from gate_folds import (LINEAR_CORPUS_PER_SOURCE, LINEAR_SLICE_PER_SOURCE, RESULTS, STATES_CORPUS_PER_SOURCE,
                        STATES_SLICE_PER_SOURCE, rows_for)
from provenance import header
from scipy import sparse

from rebuttal.learned.datasets import LabelledText

RECALL_TARGET = 0.9
PREVIOUS_GATE = Path(__file__).resolve().parent / "archive" / "gate_states_2026-12-04.npz"


@dataclass
class Variant:
    name: str
    lang: str
    kind: str  # "linear" or "states"
    fit: Callable  # (X, y, weights) -> scorer(X) -> probabilities
    weights: Callable  # (corpus rows, hatecheck rows) -> per-row training weights
    slurs: bool = False  # a column counting slurs used in the text's own voice (fire/slurs.py's list)


@dataclass
class Measured:
    variant: Variant
    folds: list[dict]
    called: np.ndarray  # per HateCheck case: called hateful at its fold's cut
    cut: float  # chosen on all grouped held-out scores: what a shipped gate would use
    slice_scores: np.ndarray


def logistic(c: float, states: bool):
    """A fit: the linear gate's logistic regression (C `c`, class-balanced), standardised for states."""
    from sklearn.linear_model import LogisticRegression

    def fit(x, y, w):
        mean = scale = None
        if states:
            mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
            x = (x - mean) / scale
        model = LogisticRegression(C=c, max_iter=5000, class_weight="balanced").fit(x, y, sample_weight=w)
        return lambda z: model.predict_proba((z - mean) / scale if states else z)[:, 1]

    return fit


def hatecheck_weight(weight: float):
    return lambda corpus, hatecheck: np.r_[np.ones(len(corpus)), np.full(len(hatecheck), weight)]


def per_functionality(weight: float):
    """HateCheck rows count `weight` in all, shared equally by the functionalities (a small one
    counts as much as a large one), the corpus 1 a row."""
    def weights(corpus, hatecheck):
        sizes = Counter(r.source for r in hatecheck)
        mean = len(hatecheck) / len(sizes)
        return np.r_[np.ones(len(corpus)), [weight * mean / sizes[r.source] for r in hatecheck]]

    return weights


def slur_column(texts: list[str]) -> np.ndarray:
    from rebuttal.fire.slurs import slur_used  # the benchmark may read fire/; learned/ may not

    return np.array([[1.0 if slur_used(t) else 0.0] for t in texts], dtype=np.float32)


def features(lang: str, kind: str, rows: dict, encoder) -> dict:
    """Per part ("corpus", "hatecheck", "slice"): the kind's feature matrix."""
    from rebuttal.learned.text import ngram_vectorizer
    from rebuttal.learned.train import STATES, cached_pooled_states, states_reader

    out = {}
    for part, got in rows.items():
        texts = [r.text for r in got]
        if kind == "states":  # every text is cached by `fill`; the reader is opened only if one is not
            out[part] = cached_pooled_states(STATES, texts, reader=states_reader(STATES, threads=1))
        else:
            grams = ngram_vectorizer(lang).transform(texts)
            out[part] = sparse.hstack([sparse.csr_matrix(encoder.encode(texts)), grams]).tocsr() if lang == "en" else grams
    return out


def with_slurs(x, texts: list[str]):
    column = slur_column(texts)
    return sparse.hstack([x, sparse.csr_matrix(column)]).tocsr() if sparse.issparse(x) else np.hstack([x, column])


def stack(a, b):
    return sparse.vstack([a, b]).tocsr() if sparse.issparse(a) else np.vstack([a, b])


def measure(variant: Variant, rows: dict, x: dict) -> Measured:
    from rebuttal.learned.calibration import FPR_BUDGET, fold_rates, functionality_folds, threshold_cut

    if variant.slurs:
        x = {part: with_slurs(m, [r.text for r in rows[part]]) for part, m in x.items()}
    corpus, hatecheck = rows["corpus"], rows["hatecheck"]
    x_all, n = stack(x["corpus"], x["hatecheck"]), len(corpus)
    y = np.array([r.hateful for r in corpus + hatecheck])
    w = variant.weights(corpus, hatecheck)
    hateful = [r.hateful for r in hatecheck]
    folds, scores = functionality_folds(hatecheck), np.zeros(len(hatecheck))
    for test in folds:
        train = np.r_[np.arange(n), n + np.setdiff1d(np.arange(len(hatecheck)), test)]
        scores[test] = variant.fit(x_all[train], y[train], w[train])(x["hatecheck"][test])
    rates, called = fold_rates(scores, hateful, folds, RECALL_TARGET, FPR_BUDGET)
    cut = threshold_cut(scores, hateful, RECALL_TARGET, FPR_BUDGET)
    slice_scores = variant.fit(x_all, y, w)(x["slice"])
    return Measured(variant, rates, called, cut, slice_scores)


def rate(flags: np.ndarray) -> str:
    from rebuttal.learned.calibration import wilson

    k, n = int(flags.sum()), len(flags)
    if n == 0:
        return "n/a"
    low, high = wilson(k, n)
    return f"{k / n:.3f} ({k}/{n}; {low:.2f}-{high:.2f})"


def slice_cells(rows, scores, cut) -> str:
    hateful = np.array([r.hateful for r in rows])
    called = np.asarray(scores) >= cut
    return f"{rate(called[hateful])} | {rate(called[~hateful])}"


def fold_cells(folds: list[dict]) -> str:
    recall, fpr = [f["recall"] for f in folds], [f["fpr"] for f in folds]
    cuts = ", ".join(f"{f['cut']:.2f}" for f in folds)
    return f"{np.mean(recall):.3f} | {min(recall):.3f} | {np.mean(fpr):.3f} | {max(fpr):.3f} | {cuts}"


def functionality_rows(measured: list[Measured], hatecheck) -> list[str]:
    names = sorted({r.source.split(":", 1)[1] for r in hatecheck})
    lines = ["| functionality | gold | cases | " + " | ".join(m.variant.name for m in measured) + " |",
             "|---|---|---|" + "---|" * len(measured)]
    for name in names:
        idx = np.array([i for i, r in enumerate(hatecheck) if r.source.endswith(":" + name)])
        gold = "hateful" if hatecheck[idx[0]].hateful else "non-hateful"
        cells = " | ".join(f"{m.called[idx].mean():.2f}" for m in measured)
        lines.append(f"| {name} | {gold} | {len(idx)} | {cells} |")
    return lines


def per_source(rows, scores, cut) -> str:
    by = defaultdict(list)
    for r, s in zip(rows, scores):
        by[(r.source, r.hateful)].append(s >= cut)
    return "; ".join(f"{src} {'hateful' if h else 'non-hateful'} {sum(v)}/{len(v)}" for (src, h), v in sorted(by.items()))


def variants() -> list[Variant]:
    linear, states = logistic(4.0, False), logistic(0.001, True)
    out = []
    for lang in ("en", "zh"):
        out += [Variant("linear (the fallback's recipe)", lang, "linear", linear, hatecheck_weight(1.0)),
                Variant("linear, HateCheck x3", lang, "linear", linear, hatecheck_weight(3.0)),
                Variant("linear, per-functionality weights", lang, "linear", linear, per_functionality(3.0))]
        if lang == "en":
            out += [Variant("linear + slur column", lang, "linear", linear, hatecheck_weight(1.0), slurs=True),
                    Variant("linear + slurs, per-functionality", lang, "linear", linear, per_functionality(3.0), True)]
        out += [Variant("states (as shipped: zh alone, en the blend's half)", lang, "states", states, hatecheck_weight(3.0)),
                Variant("states, per-functionality weights", lang, "states", states, per_functionality(3.0))]
        if lang == "en":
            out.append(Variant("states + slur column", lang, "states", states, hatecheck_weight(3.0), slurs=True))
    return out


def states_ready(rows: dict) -> bool:
    from rebuttal.learned.train import STATES, uncached

    return not uncached(STATES, [r.text for part in rows.values() for r in part])


def shipped_on_slice(lang: str, rows: dict, x: dict, kind: str) -> str | None:
    """The shipped gate (kind "states") or its fallback ("linear") on the slice, at its own threshold."""
    from rebuttal.learned import HateGate
    from rebuttal.learned.text import sigmoid

    gate, label = HateGate.load(), f"shipped {'gate' if kind == 'states' else 'fallback'} ({kind})"
    if kind == "states" and gate.gates[lang].blend is not None:  # the blend's own rows are the recorded ones
        gate, label = HateGate.load(PREVIOUS_GATE), "the gate shipped 2026-12-04 to 2026-12-07 (states; benchmarks/archive)"
    one = gate.gates[lang] if kind == "states" else gate.fallbacks[lang]
    scores = sigmoid(x["slice"] @ one.coef + one.intercept)
    note = " (in-sample: it trained on every STATE-ToxiCN post)" if lang == "zh" else ""
    return (f"| {lang} | {label}{note} | {one.threshold:.2f} | "
            f"{slice_cells(rows['slice'], scores, one.threshold)} | {per_source(rows['slice'], scores, one.threshold)} |")


def shipped_recorded(lang: str, hatecheck) -> tuple[list[str], list[str], Measured | None]:
    """The shipped gate's own rows, from the scores `train-gate` recorded when it trained it (its
    functionality-held-out HateCheck scores, the held-out and dev real-post samples), when its cut
    was chosen on the real-post dev slice: every fold is read at that one cut, chosen without HateCheck."""
    from rebuttal.learned import HateGate
    from rebuttal.learned.calibration import functionality_folds, rates_at

    gate = HateGate.load()
    one, info = gate.gates[lang], gate.meta["languages"][lang]
    if info.get("real_fpr_budget") is None or "dev_posts" not in info:
        return [], [], None
    name = f"shipped gate ({one.kind}), cut on the real-post dev slice"
    scores, hateful = np.array(info["grouped_scores"]), np.array([r.hateful for r in hatecheck])
    folds = rates_at(scores, list(hateful), functionality_folds(hatecheck), one.threshold)
    fold_row = [f"| {lang} | {name} | {info['records']} (states half), {info['fallback']['records']} (linear half) "
                f"| {fold_cells(folds)} |"]
    real_rows = []
    for key, what in (("dev_posts", "dev slice (the cut was chosen here)"), ("real_posts", "held-out slice")):
        posts = info[key]
        rows = [LabelledText("", h, src) for h, src in zip(posts["hateful"], posts["sources"])]
        real_rows.append(f"| {lang} | {name}: {what} | {one.threshold:.2f} | {slice_cells(rows, posts['scores'], one.threshold)} "
                         f"| {per_source(rows, posts['scores'], one.threshold)} |")
    measured = Measured(Variant(name, lang, "blend", None, None), folds, scores >= one.threshold, one.threshold,
                        np.zeros(0))
    return fold_row, real_rows, measured


def cut_table(lang: str, hatecheck) -> list[str]:
    """What another cut would do, from the scores the shipped gate recorded (for `calibrate-gate
    --threshold`): the dev and held-out real-post slices, template- and functionality-held-out HateCheck."""
    from rebuttal.learned import HateGate

    gate = HateGate.load()
    one, info = gate.gates[lang], gate.meta["languages"][lang]
    if info.get("real_fpr_budget") is None:
        return []
    hateful = np.array([r.hateful for r in hatecheck])
    parts = [(np.array(info[k]["scores"]), np.array(info[k]["hateful"], dtype=bool)) for k in ("dev_posts", "real_posts")]
    parts += [(np.array(info[k]), hateful) for k in ("held_out_scores", "grouped_scores")]
    lines = [f"## Other cuts for the shipped {lang} gate", "", "Recall / FPR at each cut, from the scores the gate "
             "recorded; the first row is the shipped cut. `rebuttal learned calibrate-gate --threshold "
             f"{lang}=CUT` sets another.", "", "| cut | real-post dev slice | held-out real posts | HateCheck, "
             "template-held-out | HateCheck, functionality-held-out |", "|---|---|---|---|---|"]
    for cut in (one.threshold, 0.5, 0.6, 0.7, 0.8):
        cells = " | ".join(f"{(s[y] >= cut).mean():.3f} / {(s[~y] >= cut).mean():.3f}" for s, y in parts)
        lines.append(f"| {cut:.2f} | {cells} |")
    return lines + [""]


def run_language(lang: str, encoder) -> tuple[list[str], list[str], list[str], list[str]]:
    hatecheck = rows_for(lang, "linear")["hatecheck"]
    folds, real, tables, skipped = [], [], cut_table(lang, hatecheck), []
    fold_row, real_rows, shipped = shipped_recorded(lang, hatecheck)
    folds += fold_row
    real += real_rows
    for kind in ("linear", "states"):
        rows = rows_for(lang, kind)
        if kind == "states" and not states_ready({"slice": rows["slice"]}):
            skipped.append(f"{lang} states: the slice's states are not all cached (`gate_folds.py fill`)")
            continue
        x = features(lang, kind, {"slice": rows["slice"]} if kind == "states" and not states_ready(rows) else rows, encoder)
        real.append(shipped_on_slice(lang, rows, x, kind))
        if kind == "states" and not states_ready(rows):
            skipped.append(f"{lang} states variants: HateCheck and corpus states not cached on this machine")
            continue
        measured = [measure(v, rows, x) for v in variants() if (v.lang, v.kind) == (lang, kind)]
        for m in measured:
            folds.append(f"| {lang} | {m.variant.name} | {len(rows['corpus'])} + {len(rows['hatecheck'])} | "
                         f"{fold_cells(m.folds)} |")
            real.append(f"| {lang} | {m.variant.name} | {m.cut:.2f} | {slice_cells(rows['slice'], m.slice_scores, m.cut)} "
                        f"| {per_source(rows['slice'], m.slice_scores, m.cut)} |")
        if kind == "states" and shipped is not None:
            measured.append(shipped)  # its fold and slice rows are the recorded ones above
        tables += [f"### {lang}, {kind}: share called hateful per functionality (grouped folds, each fold's own cut; "
                   "the shipped blend at its one cut)", "", *functionality_rows(measured, rows["hatecheck"]), ""]
    return folds, real, tables, skipped


def main() -> None:
    import torch

    from rebuttal.llm.embeddings import load_minilm

    torch.set_num_threads(1)  # the machine's CPU is shared with an LLM benchmark
    encoder = load_minilm()
    lines = header("Hate gate on unseen functionalities and held-out real posts (issue 47)",
                   split="HateCheck en / Multilingual HateCheck zh dev halves, 5 folds of whole functionalities; "
                   "the held-out slice of real posts (datasets.real_posts: a hashed tenth of implicit hate, ETHOS, "
                   "counter-speech, STATE-ToxiCN, and the Gab test file), a seeded sample "
                   f"({LINEAR_SLICE_PER_SOURCE} per source and label for linear gates, {STATES_SLICE_PER_SOURCE} for "
                   "states gates; the shipped gate: the 100 per source and label it recorded); the real-post dev "
                   "slice (datasets.real_dev: another hashed tenth; the shipped English cut is chosen on it); training "
                   f"corpus: {LINEAR_CORPUS_PER_SOURCE} rows per source and label (linear variants), the shipped "
                   "English sample (states: 500 per source and label and every silver train post; the shipped linear "
                   f"half: up to 6,000), {STATES_CORPUS_PER_SOURCE} (Chinese states)", model="none (the gate alone); states gates read qwen2.5-1.5b's layer-14 states",
                   memory="all-MiniLM-L6-v2 + word n-grams (en linear), character n-grams (zh linear), the chat "
                   "model's pooled layer-14 states (states); the shipped gate src/rebuttal/learned/data/gate.npz")
    folds, real, tables, skipped = [], [], [], []
    for lang in ("en", "zh"):
        for into, got in zip((folds, real, tables, skipped), run_language(lang, encoder)):
            into += got
    lines += [*INTRO, "| language | variant | training rows (corpus + HateCheck) | recall, mean | recall, worst fold "
              "| FPR, mean | FPR, worst fold | each fold's cut |", "|---|---|---|---|---|---|---|---|", *folds, "",
              "## Held-out real posts", "", REAL_INTRO, "",
              "| language | gate | cut | recall (hateful called hateful; n; 95% CI) | FPR (non-hateful called hateful; "
              "n; 95% CI) | per source |", "|---|---|---|---|---|---|", *real, "", *tables]
    if skipped:
        lines += ["Not measured here: " + "; ".join(skipped) + ".", ""]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


INTRO = ["Targets (issue 47): recall >= 0.90 at FPR <= 0.15 on functionality-held-out folds (mean and worst), no "
         "English functionality under 0.70; on held-out real posts recall >= 0.85 at FPR <= 0.20.", "",
         "Each fold leaves whole HateCheck functionalities out (hateful and non-hateful ones, about a fifth of "
         "each); its gate trains on the corpus and the other folds, and its cut is the shipped rule (recall 0.90, "
         "lowered while FPR <= 0.125) applied to the other folds' held-out scores, never its own. So a fold's "
         "figures are what a gate does on kinds of phrasing it has never seen, at a cut chosen without them. The "
         "shipped English gate's cut was chosen on real posts, never on HateCheck, so every fold is read at that one "
         "cut.", ""]
REAL_INTRO = ("Real posts no gate trains on. A variant is trained on its whole corpus and HateCheck dev half and "
              "cut where its grouped-fold scores put the cut; the shipped gate at its own threshold. The shipped "
              "English gate's rows are the scores `train-gate` recorded for it: its cut was chosen on the dev slice "
              "(FPR <= 0.175), so its held-out slice row is the report. English posts the 2026-12-02 gate trained on "
              "are not in the variants' English sample. Gab: hateful = `hd` or `cv` (its labels "
              "for hate-based dehumanisation or a call to violence); implicit hate: explicit or implicit hate; "
              "counter-speech: non-hateful.")
