"""The hate gate on the HateCheck dev halves (English and Mandarin): hateful recall and the
false-positive rate on non-hateful cases, per functionality. Results: benchmarks/results/gate.md.

    python benchmarks/gate.py                                   # the shipped gate
    python benchmarks/gate.py --compare runs/gate-head/gate.npz  # beside another trained gate

The shipped gate is trained on these dev halves, so scoring it on them would be in-sample. The
honest estimate is template-held-out cross-validation: each fold's gate is trained on the
corpora plus the other templates' cases and scores the held-out templates with the shipped
threshold (`rebuttal learned train-gate` records these scores in the gate it ships). The
in-sample figures are printed beside them, labelled. Folds that leave whole functionalities out,
and held-out real posts: benchmarks/gate_folds.py (results/gate_folds.md).
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "gate.md"
SILVER_DEV = DATA / "factualcs-silver" / "dev.jsonl"
SILVER_DEV2 = DATA / "factualcs-silver" / "dev_round2.jsonl"
TIMED_POSTS = 104  # real posts timed one at a time, as FIRE reads them


def rates(rows, scores, threshold) -> tuple[float, float, int, int]:
    hateful = np.array([r.hateful for r in rows])
    flagged = np.asarray(scores) >= threshold
    recall = flagged[hateful].mean() if hateful.any() else float("nan")
    fpr = flagged[~hateful].mean() if (~hateful).any() else float("nan")
    return float(recall), float(fpr), int(hateful.sum()), int((~hateful).sum())


INTRO = ["Targets (issue 11): hateful recall >= 0.90 and non-hateful FPR <= 0.15 on both halves.", "",
         "Held-out scores are those `rebuttal learned train-gate` records when it trains a gate (the same "
         "template folds that chose its threshold). `silver dev hateful called hateful`: the share of the "
         "hateful silver dev posts at or above the threshold (round 1; round 2 in brackets), the gate's "
         "recall on the kind of post FIRE exists for. `ms per case`: the gate's own time per HateCheck case in the in-sample pass (batched; the "
         "MiniLM vectors FIRE computes anyway are not counted; a states gate's includes its forward pass, one "
         "case at a time). `ms per real post`: the same, one post at a time as FIRE calls it, on real posts, "
         "which are longer: the hateful silver dev round-1 posts (English), the first "
         f"{TIMED_POSTS} STATE-ToxiCN train posts (Chinese; timed only, the gate trained on them); median "
         "[90th percentile]. The learned parts' target (issue 11) is < 100 ms a post.", "",
         "| language | gate | threshold | recall (held-out) | FPR (held-out) | recall (in-sample) | FPR (in-sample) "
         "| silver dev hateful called hateful, round 1 [round 2] | ms per case (after MiniLM) | ms per real post, "
         "median [p90] |", "|---|---|---|---|---|---|---|---|---|---|"]

BAND_INTRO = ["", "## The LLM's veto band", "",
              "FIRE writes a reply when the gate says hateful and the LLM agrees; from the gate's `sure` score on, "
              "the LLM's \"not hateful\" no longer vetoes (the reply is flagged `gate_llm_disagrees`). `sure` is "
              "chosen at training so that at most 15% of held-out non-hateful cases reach it. Held-out scores:", "",
              "| language, gate | threshold | sure | non-hateful at >= sure (no veto possible) | non-hateful in the band "
              "(the LLM decides) | hateful at >= sure | hateful in the band |", "|---|---|---|---|---|---|---|"]


def main() -> None:
    import argparse

    from rebuttal.learned import HateGate, datasets
    from rebuttal.learned.gate import SHIPPED
    from rebuttal.learned.text import language
    from rebuttal.llm.embeddings import load_minilm

    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", action="append", default=[], metavar="GATE.npz",
                        help="another gate from `rebuttal learned train-gate` to report beside the shipped one")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"needs the shared data at {DATA}")
    gates = {"shipped": HateGate.load(SHIPPED), **{Path(path).parent.name: HateGate.load(path) for path in args.compare}}
    kinds = {name: {lang: info.get("model", "linear") for lang, info in g.meta["languages"].items()}
             for name, g in gates.items()}
    lines = header("Hate gate on the HateCheck dev halves", split="HateCheck dev half (English) and Multilingual "
                   "HateCheck dev half (Mandarin), template-held-out 5-fold cross-validation (the gates train on "
                   "these halves); silver dev rounds 1 and 2 (hateful posts FIRE must answer; no gate trains on them; round 1 "
                   "chose how many silver train posts the English gate reads, round 2 was not looked at for it)",
                   model="none for the vote (the gate alone; FIRE adds the LLM's vote); a states gate reads qwen2.5-1.5b's hidden states",
                   memory="the chat model's layer-14 states (states gates); all-MiniLM-L6-v2 + word n-grams "
                   "(English linear gates), MiniLM token states (token head), character n-grams (Chinese linear "
                   "gates); gates: " + "; ".join(
                       f"{name}: {os.path.relpath(SHIPPED, ROOT) if name == 'shipped' else path} (en {k['en']}, zh {k['zh']})"
                       for (name, k), path in zip(kinds.items(), [SHIPPED, *args.compare])))
    lines += INTRO
    tables, bands = [], []
    encoder = load_minilm()
    silver = [[r.text for r in datasets.silver_posts([path]) if r.hateful] for path in (SILVER_DEV, SILVER_DEV2)]
    timed = {"en": silver[0][:TIMED_POSTS], "zh": [r.text for r in datasets.state_toxicn(DATA)[:TIMED_POSTS]]}
    for lang in ("en", "zh"):
        hatecheck = datasets.hatecheck(DATA, lang)
        texts = [r.text for r in hatecheck]
        vectors = encoder.encode(texts)
        own = [[t for t in posts if language(t) == lang] for posts in silver]  # encoded once, scored by every gate
        own_vectors = [encoder.encode(posts) for posts in own]
        timed_vectors = encoder.encode(timed[lang])
        for name, gate in gates.items():
            if name != "shipped" and kinds[name][lang] == kinds["shipped"][lang]:
                continue  # the same kind of model for this language: the shipped rows stand for it
            for label, one, held_out in variants(gate, name, kinds[name][lang], lang, hatecheck):
                started = time.perf_counter()
                in_sample = one.score(texts, vectors if one.reads_vectors else None, lang, encoder)
                ms = (time.perf_counter() - started) * 1000 / len(texts)
                lines.append(row(lang, label, hatecheck, held_out, in_sample, one.threshold)
                             + silver_recall(one, lang, own, own_vectors, encoder) + f" {ms:.2f} |"
                             + post_ms(one, lang, timed[lang], timed_vectors, encoder))
                tables += functionality_table(f"{lang}, {label}", hatecheck, held_out, one.threshold)
                bands.append(band_row(f"{lang}, {label}", hatecheck, held_out, one))
    lines += [*BAND_INTRO, *bands, "", *tables]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def variants(gate, name: str, kind: str, lang: str, hatecheck):
    """(label, LanguageGate, held-out scores): the language's gate, then its fallback if it has one."""
    yield f"{name} ({kind})", gate.gates[lang], recorded_held_out(gate, lang, hatecheck, name)
    if lang in gate.fallbacks:
        info = gate.meta["languages"][lang]["fallback"]
        yield f"{name} fallback ({info['model']})", gate.fallbacks[lang], np.array(info["held_out_scores"])


def silver_recall(gate, lang: str, rounds: list[list[str]], vectors: list, encoder) -> str:
    """"called/posts (share)" on round 1, round 2's in brackets."""
    if not any(rounds):
        return " n/a (no posts in this language) |"
    shares = []
    for texts, rows in zip(rounds, vectors):
        called = int((gate.score(texts, rows if gate.reads_vectors else None, lang, encoder) >= gate.threshold).sum())
        shares.append(f"{called}/{len(texts)} ({called / len(texts):.2f})")
    return f" {shares[0]} [{shares[1]}] |"


def post_ms(gate, lang: str, posts: list[str], vectors, encoder) -> str:
    """Median [p90] ms of scoring one post at a time (MiniLM vectors given, as in FIRE)."""
    times = []
    for text, vector in zip(posts, vectors):
        started = time.perf_counter()
        gate.score([text], vector[None] if gate.reads_vectors else None, lang, encoder)
        times.append((time.perf_counter() - started) * 1000)
    return f" {np.median(times):.1f} [{np.percentile(times, 90):.1f}] |"


def recorded_held_out(gate, lang: str, hatecheck, name: str) -> np.ndarray:
    scores = gate.meta["languages"][lang].get("held_out_scores")
    if scores is None or len(scores) != len(hatecheck):
        sys.exit(f"gate {name} has no held-out scores for {lang}: retrain it with `rebuttal learned train-gate`")
    return np.array(scores)


def row(lang, name, hatecheck, held_out, in_sample, threshold) -> str:
    r_out, f_out, _, _ = rates(hatecheck, held_out, threshold)
    r_in, f_in, _, _ = rates(hatecheck, in_sample, threshold)
    return f"| {lang} | {name} | {threshold:.2f} | {r_out:.3f} | {f_out:.3f} | {r_in:.3f} | {f_in:.3f} |"


def band_row(lang: str, rows, scores, gate) -> str:
    hateful = np.array([r.hateful for r in rows])
    scores = np.asarray(scores)
    above, band = scores >= gate.sure, (scores >= gate.threshold) & (scores < gate.sure)
    return (f"| {lang} | {gate.threshold:.2f} | {gate.sure:.2f} | {above[~hateful].mean():.3f} | {band[~hateful].mean():.3f} "
            f"| {above[hateful].mean():.3f} | {band[hateful].mean():.3f} |")


def functionality_table(lang: str, rows, scores, threshold) -> list[str]:
    by = defaultdict(list)
    for row, score in zip(rows, scores):
        by[row.source.split(":", 1)[1]].append((row, score))
    lines = [f"### {lang}: per functionality (held-out)", "",
             "| functionality | gold | cases | called hateful |", "|---|---|---|---|"]
    for name in sorted(by):
        pairs = by[name]
        called = np.mean([s >= threshold for _, s in pairs])
        gold = "hateful" if pairs[0][0].hateful else "non-hateful"
        lines.append(f"| {name} | {gold} | {len(pairs)} | {called:.2f} |")
    cases = [row for pairs in by.values() for row, _ in pairs]
    hateful = sum(row.hateful for row in cases)
    return [*lines, "", f"Held-out cases: {hateful} hateful, {len(cases) - hateful} non-hateful.", ""]


if __name__ == "__main__":
    main()
