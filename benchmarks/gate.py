"""The hate gate on the HateCheck dev halves (English and Mandarin): hateful recall and the
false-positive rate on non-hateful cases, per functionality. Results: benchmarks/results/gate.md.

    python benchmarks/gate.py

The shipped gate is trained on these dev halves, so scoring it on them would be in-sample. The
honest estimate is template-held-out cross-validation: each fold's gate is trained on the
corpora plus the other templates' cases and scores the held-out templates with the shipped
threshold. The in-sample figures are printed beside it, labelled.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "gate.md"


def rates(rows, scores, threshold) -> tuple[float, float, int, int]:
    hateful = np.array([r.hateful for r in rows])
    flagged = np.asarray(scores) >= threshold
    recall = flagged[hateful].mean() if hateful.any() else float("nan")
    fpr = flagged[~hateful].mean() if (~hateful).any() else float("nan")
    return float(recall), float(fpr), int(hateful.sum()), int((~hateful).sum())


def main() -> None:
    from rebuttal.learned import HateGate, datasets
    from rebuttal.learned.train import _encode, _template_folds

    if not DATA.exists():
        sys.exit(f"needs the shared data at {DATA}")
    gate = HateGate.load()
    lines = header("Hate gate on the HateCheck dev halves", split="HateCheck dev half (English) and Multilingual "
                   "HateCheck dev half (Mandarin); template-held-out 5-fold cross-validation (the shipped gate "
                   "itself trained on these halves)", model="none (the gate alone; FIRE adds the LLM's vote)",
                   memory="all-MiniLM-L6-v2 vectors (English); character n-grams (Chinese)")
    lines += ["Targets (issue 11): hateful recall >= 0.90 and non-hateful FPR <= 0.15 on both halves.", "",
              "| language | threshold | recall (held-out) | FPR (held-out) | recall (in-sample) | FPR (in-sample) |",
              "|---|---|---|---|---|---|"]
    tables, bands = [], []
    for lang in ("en", "zh"):
        corpus, hatecheck = datasets.gate_corpus(DATA, lang), datasets.hatecheck(DATA, lang)
        vectors = _encode([r.text for r in corpus + hatecheck]) if lang == "en" else None
        held_out = _template_folds(corpus, hatecheck, vectors, lang, gate.meta.get("c", 4.0))
        threshold = gate.gates[lang].threshold
        hc_vectors = vectors[len(corpus):] if vectors is not None else None
        in_sample = [score for score, _, _ in gate.scores([r.text for r in hatecheck], hc_vectors)]
        r_out, f_out, _, _ = rates(hatecheck, held_out, threshold)
        r_in, f_in, _, _ = rates(hatecheck, in_sample, threshold)
        lines.append(f"| {lang} | {threshold:.2f} | {r_out:.3f} | {f_out:.3f} | {r_in:.3f} | {f_in:.3f} |")
        tables += functionality_table(lang, hatecheck, held_out, threshold)
        bands.append(band_row(lang, hatecheck, held_out, gate.gates[lang]))
    lines += ["", "## The LLM's veto band", "",
              "FIRE writes a reply when the gate says hateful and the LLM agrees; from the gate's `sure` score on, "
              "the LLM's \"not hateful\" no longer vetoes (the reply is flagged `gate_llm_disagrees`). `sure` is "
              "chosen at training so that at most 15% of held-out non-hateful cases reach it. Held-out scores:", "",
              "| language | threshold | sure | non-hateful at >= sure (no veto possible) | non-hateful in the band "
              "(the LLM decides) | hateful at >= sure | hateful in the band |", "|---|---|---|---|---|---|---|",
              *bands, "", *tables]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


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
    return [*lines, ""]


if __name__ == "__main__":
    main()
