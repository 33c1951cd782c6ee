"""A hate gate's cuts from its template-held-out HateCheck scores: the threshold (answer at or
above it) and `sure` (from there the LLM can no longer veto); and the folds that leave whole
HateCheck functionalities out, which say what a new kind of phrasing does (issue 47)."""

from __future__ import annotations

from collections import defaultdict

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
    if info.get("real_fpr_budget") is not None and info.get("dev_posts"):
        # Cut on real posts: the lowest cut that keeps the real-post dev slice's non-hateful posts
        # within the budget (HateCheck's templates did not predict real posts, issue 47). No LLM
        # band: on real posts the stance vote called half the human counter-speech an attack.
        dev = info["dev_posts"]
        gate.threshold = sure_cut(np.array(dev["scores"]), dev["hateful"], 0.05, info["real_fpr_budget"])
        gate.sure = gate.threshold
    else:
        scores = np.array(info["held_out_scores"])
        gate.threshold = threshold_cut(scores, hateful, recall_target, fpr_budget)
        gate.sure = sure_cut(scores, hateful, gate.threshold, max_fpr)
    info.update(threshold=gate.threshold, sure=gate.sure)


def threshold_cut(scores: np.ndarray, hateful: list[bool], recall_target: float, fpr_budget: float) -> float:
    """The recall cut, lowered while held-out non-hateful cases stay within `fpr_budget`."""
    scores = np.asarray(scores)
    return min(recall_cut(scores, hateful, recall_target), sure_cut(scores, hateful, 0.05, fpr_budget))


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


def functionality_folds(rows, folds: int = 5) -> list[np.ndarray]:
    """Test indices of `folds` folds of HateCheck rows that leave whole functionalities out (a row's
    functionality is its `source`; a template belongs to one, so none is in train and test).
    Hateful and non-hateful functionalities are dealt round-robin, largest first, from opposite
    ends, so every fold holds both kinds and the folds are near one size."""
    by: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by[row.source].append(i)
    kinds = [sum(rows[by[n][0]].hateful == kind for n in by) for kind in (True, False)]
    folds = max(1, min(folds, *kinds))  # fewer functionalities of a kind than folds: fewer folds
    out: list[list[int]] = [[] for _ in range(folds)]
    for kind in (True, False):
        names = sorted((n for n in by if rows[by[n][0]].hateful == kind), key=lambda n: (-len(by[n]), n))
        for j, name in enumerate(names):
            out[j % folds if kind else folds - 1 - j % folds] += by[name]
    return [np.array(sorted(f), dtype=int) for f in out if f]


def fold_rates(scores: np.ndarray, hateful: list[bool], folds: list[np.ndarray], recall_target: float,
               fpr_budget: float) -> tuple[list[dict], np.ndarray]:
    """Each fold's cut, chosen by `threshold_cut` on the other folds' held-out scores only, and its
    recall and FPR at that cut; plus, per case, whether its fold's cut called it hateful."""
    scores, hateful = np.asarray(scores), np.asarray(hateful, dtype=bool)
    called, out = np.zeros(len(scores), dtype=bool), []
    for test in folds:
        rest = np.setdiff1d(np.arange(len(scores)), test)
        cut = threshold_cut(scores[rest], list(hateful[rest]), recall_target, fpr_budget)
        called[test] = scores[test] >= cut
        h, b = test[hateful[test]], test[~hateful[test]]
        out.append({"cut": cut, "recall": float(called[h].mean()) if len(h) else float("nan"),
                    "fpr": float(called[b].mean()) if len(b) else float("nan"), "hateful": len(h), "benign": len(b)})
    return out, called


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion (scipy's, as the FIRE benchmarks use)."""
    from scipy.stats import binomtest

    if n == 0:
        return float("nan"), float("nan")
    ci = binomtest(successes, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def summarise_grouped(info: dict, hatecheck, recall_target: float, fpr_budget: float) -> None:
    """Mean and worst fold recall and FPR of the functionality-held-out scores a gate recorded
    (`info["grouped_scores"]`), each fold at a cut chosen on the other folds; into `info["grouped"]`."""
    if "grouped_scores" not in info:
        return  # a gate trained before 2026-12-05
    hateful, folds = [r.hateful for r in hatecheck], functionality_folds(hatecheck)
    if len(folds) < 2:
        return  # one fold: no other folds to choose its cut on
    scores = np.array(info["grouped_scores"])
    at_cut = info.get("real_fpr_budget") is not None  # its cut never read HateCheck: every fold at that cut
    rates = (rates_at(scores, hateful, folds, info["threshold"]) if at_cut else
             fold_rates(scores, hateful, folds, recall_target, fpr_budget)[0])
    recall, fpr = [r["recall"] for r in rates], [r["fpr"] for r in rates]
    info["grouped"] = {"recall_mean": round(float(np.nanmean(recall)), 3), "recall_worst": round(float(np.nanmin(recall)), 3),
                       "fpr_mean": round(float(np.nanmean(fpr)), 3), "fpr_worst": round(float(np.nanmax(fpr)), 3),
                       "folds": len(rates), "at_threshold": at_cut}


def rates_at(scores: np.ndarray, hateful: list[bool], folds: list[np.ndarray], cut: float) -> list[dict]:
    """Each fold's recall and FPR at one cut chosen without HateCheck."""
    scores, hateful = np.asarray(scores), np.asarray(hateful, dtype=bool)
    return [{"cut": cut, "recall": float((scores[t][hateful[t]] >= cut).mean()),
             "fpr": float((scores[t][~hateful[t]] >= cut).mean())} for t in folds]


def real_post_rates(info: dict, key: str = "real_posts") -> tuple[tuple[int, int], tuple[int, int]] | None:
    """(hateful called hateful, hateful), (non-hateful called hateful, non-hateful) among the
    held-out real posts a gate recorded (`key` "dev_posts": the dev slice), at its threshold."""
    posts = info.get(key)
    if not posts or not posts["scores"]:
        return None
    called = np.array(posts["scores"]) >= info["threshold"]
    hateful = np.array(posts["hateful"], dtype=bool)
    return (int(called[hateful].sum()), int(hateful.sum())), (int(called[~hateful].sum()), int((~hateful).sum()))


def evaluation_lines(info: dict, bullet: str) -> list[str]:
    """What a gate trained since 2026-12-05 records of kinds of phrasing and posts it never saw."""
    lines = []
    if grouped := info.get("grouped"):
        cut = "at the threshold" if grouped.get("at_threshold") else "each fold's cut chosen on the others"
        lines.append(f"{bullet}functionality-held-out HateCheck folds ({grouped['folds']}; {cut}): recall {grouped['recall_mean']:.3f} mean, {grouped['recall_worst']:.3f} worst fold; FPR "
                     f"{grouped['fpr_mean']:.3f} mean, {grouped['fpr_worst']:.3f} worst fold")
    chosen = "; the cut is chosen on it" if info.get("real_fpr_budget") is not None else ""
    for key, what in (("dev_posts", f"the real-post dev slice (no gate trains on it{chosen})"),
                      ("real_posts", "held-out real posts (no gate trains on them)")):
        if rates := real_post_rates(info, key):
            cells = [f"{k}/{n} = {k / max(n, 1):.2f} (95% CI {wilson(k, n)[0]:.2f}-{wilson(k, n)[1]:.2f})" for k, n in rates]
            lines.append(f"{bullet}{what}, {', '.join(sorted(set(info[key]['sources'])))}, at the threshold: recall "
                         f"{cells[0]}; FPR {cells[1]}")
    return lines
