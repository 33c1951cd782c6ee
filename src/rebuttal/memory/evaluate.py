"""How well the memory's t̂ matches gold categories: accuracy, confusion matrix, and accuracy
by purity band (the FIRE paper's Table 11: above/below the threshold, and 0.2-wide bands)."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel

from rebuttal.memory.records import MemoryRecord
from rebuttal.memory.store import Memory
from rebuttal.types import HateType

PURITY_BANDS = ((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.0))


class Band(BaseModel):
    label: str
    count: int
    share: float
    accuracy: float | None  # None when the band is empty


class EvalReport(BaseModel):
    n: int
    k: int
    threshold: float
    accuracy: float
    macro_f1: float
    ambiguous_share: float
    confusion: dict[str, dict[str, int]]  # gold -> predicted -> count
    above: Band  # ρ >= threshold
    below: Band
    bands: list[Band]
    pure: Band  # ρ = 1


def evaluate(memory: Memory, records: list[MemoryRecord], k: int | None = None) -> EvalReport:
    """Embed the records' posts with the memory's encoder and score t̂ against their labels."""
    vectors = memory._encode([r.hate_speech for r in records])
    return evaluate_vectors(memory, vectors, [r.category for r in records], k=k)


def evaluate_vectors(memory: Memory, vectors: np.ndarray, gold: list[HateType],
                     k: int | None = None) -> EvalReport:
    if len(gold) == 0:
        raise ValueError("nothing to evaluate")
    results = memory.query_vectors(vectors, k=k)
    predicted = [r.predicted for r in results]
    purity = np.array([r.purity for r in results])
    correct = np.array([p == g for p, g in zip(predicted, gold)])
    confusion = {g.value: {p.value: 0 for p in HateType} for g in HateType}
    for g, p in zip(gold, predicted):
        confusion[g.value][p.value] += 1

    def band(label: str, mask: np.ndarray) -> Band:
        count = int(mask.sum())
        return Band(label=label, count=count, share=count / len(gold),
                    accuracy=float(correct[mask].mean()) if count else None)

    bands = [band(f"{lo:.1f}-{hi:.1f}", (purity >= lo) & ((purity < hi) if hi < 1 else (purity <= hi)))
             for lo, hi in PURITY_BANDS]
    return EvalReport(
        n=len(gold), k=results[0].k, threshold=memory.threshold,
        accuracy=float(correct.mean()), macro_f1=_macro_f1(gold, predicted),
        ambiguous_share=float(np.mean([r.ambiguous for r in results])), confusion=confusion,
        above=band(f">= {memory.threshold:g}", purity >= memory.threshold),
        below=band(f"< {memory.threshold:g}", purity < memory.threshold),
        bands=bands, pure=band("= 1", purity >= 1.0),
    )


def _macro_f1(gold: list[HateType], predicted: list[HateType]) -> float:
    scores = []
    for t in set(gold):
        tp = sum(g == t and p == t for g, p in zip(gold, predicted))
        fp = sum(g != t and p == t for g, p in zip(gold, predicted))
        fn = sum(g == t and p != t for g, p in zip(gold, predicted))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return float(np.mean(scores))


def format_report(report: EvalReport) -> str:
    """Markdown: headline numbers, purity bands, confusion matrix."""
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"

    lines = [
        f"t̂ accuracy {pct(report.accuracy)} (macro-F1 {report.macro_f1:.3f}) on {report.n} items, "
        f"k={report.k}, threshold {report.threshold:g}; ambiguous {pct(report.ambiguous_share)}",
        "",
        "| purity band | items | share | accuracy |",
        "|---|---:|---:|---:|",
    ]
    for b in [report.above, report.below, *report.bands, report.pure]:
        lines.append(f"| {b.label} | {b.count} | {pct(b.share)} | {pct(b.accuracy)} |")
    names = [t.value for t in HateType]
    lines += ["", "| gold \\ predicted | " + " | ".join(names) + " |",
              "|---|" + "---:|" * len(names)]
    for g in names:
        lines.append(f"| {g} | " + " | ".join(str(report.confusion[g][p]) for p in names) + " |")
    return "\n".join(lines)
