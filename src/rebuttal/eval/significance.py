"""Paired two-tailed t-tests between two systems scored on the same items (FIRE, Table 9)."""

from __future__ import annotations

import math

from pydantic import BaseModel

from rebuttal.optional import require

ALPHA = 0.05


class PairedTest(BaseModel):
    metric: str
    n: int  # items scored by both systems
    mean_a: float | None
    mean_b: float | None
    t: float | None
    p: float | None
    significant: bool
    better: str | None  # name of the better system, "tie", or None when untestable
    note: str = ""


def paired_ttest(
    metric: str, a: dict[str, float | None], b: dict[str, float | None], *,
    name_a: str, name_b: str, lower_is_better: bool = False, alpha: float = ALPHA,
) -> PairedTest:
    """scipy.stats.ttest_rel on the items both systems have a value for."""
    stats = require("scipy.stats", "eval")
    ids = [i for i in a if i in b and a[i] is not None and b[i] is not None]
    xs = [float(a[i]) for i in ids]
    ys = [float(b[i]) for i in ids]
    if len(ids) < 2:
        return PairedTest(metric=metric, n=len(ids), mean_a=_mean(xs), mean_b=_mean(ys), t=None,
                          p=None, significant=False, better=None,
                          note="fewer than 2 paired items")
    mean_a, mean_b = _mean(xs), _mean(ys)
    diffs = [x - y for x, y in zip(xs, ys)]
    if all(d == diffs[0] for d in diffs):  # no variance: t is undefined
        if diffs[0] == 0:
            return PairedTest(metric=metric, n=len(ids), mean_a=mean_a, mean_b=mean_b, t=0.0,
                              p=1.0, significant=False, better="tie", note="identical scores")
        return PairedTest(metric=metric, n=len(ids), mean_a=mean_a, mean_b=mean_b, t=None, p=None,
                          significant=False, better=_better(mean_a, mean_b, name_a, name_b, lower_is_better),
                          note="constant difference: t undefined")
    result = stats.ttest_rel(xs, ys)  # two-sided by default
    t, p = float(result.statistic), float(result.pvalue)
    significant = bool(not math.isnan(p) and p < alpha)
    return PairedTest(metric=metric, n=len(ids), mean_a=mean_a, mean_b=mean_b, t=t, p=p,
                      significant=significant,
                      better=_better(mean_a, mean_b, name_a, name_b, lower_is_better))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _better(mean_a: float, mean_b: float, name_a: str, name_b: str, lower_is_better: bool) -> str:
    if mean_a == mean_b:
        return "tie"
    a_wins = mean_a < mean_b if lower_is_better else mean_a > mean_b
    return name_a if a_wins else name_b
