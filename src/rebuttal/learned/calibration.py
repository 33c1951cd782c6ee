"""A hate gate's cuts from its template-held-out HateCheck scores: the threshold (answer at or
above it) and `sure` (from there the LLM can no longer veto)."""

from __future__ import annotations

import numpy as np

from rebuttal.learned.gate import LanguageGate

FPR_BUDGET = 0.125  # a margin under issue 11's 0.15 target for the unseen HateCheck test half


def calibrate(gate: LanguageGate, info: dict, hateful: list[bool], recall_target: float, max_fpr: float,
              fpr_budget: float) -> None:
    """Set the gate's cuts from its held-out HateCheck scores (in `info`). The threshold is the
    highest that keeps hateful recall >= `recall_target`, lowered while held-out non-hateful
    cases stay within `fpr_budget` (silver dev posts are real hate the templates under-represent:
    the English gate at the recall cut left 20 of 104 hateful silver dev posts unanswered); `sure`, above which the LLM
    cannot veto, is the lowest cut that non-hateful cases reach at most `max_fpr` of the time."""
    scores = np.array(info["held_out_scores"])
    gate.threshold = min(recall_cut(scores, hateful, recall_target), sure_cut(scores, hateful, 0.05, fpr_budget))
    gate.sure = sure_cut(scores, hateful, gate.threshold, max_fpr)
    info.update(threshold=gate.threshold, sure=gate.sure)


def sure_cut(scores: np.ndarray, hateful: list[bool], threshold: float, max_fpr: float) -> float:
    """The lowest cut (>= threshold) that held-out non-hateful cases reach at most `max_fpr` of the time."""
    benign = np.asarray(scores)[~np.array(hateful)]
    for cut in np.linspace(threshold, 0.99, int(round((0.99 - threshold) * 100)) + 1):
        if (benign >= cut).mean() <= max_fpr:
            return round(float(cut), 2)
    return 1.01


def recall_cut(scores: np.ndarray, hateful: list[bool], recall_target: float) -> float:
    """The highest cut that keeps held-out hateful recall >= `recall_target`."""
    hateful = np.array(hateful)
    for cut in np.linspace(0.95, 0.05, 91):
        if (scores[hateful] >= cut).mean() >= recall_target:
            return round(float(cut), 2)
    return 0.05
