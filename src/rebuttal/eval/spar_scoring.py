"""SPAR-Hate scorers: STATE-ToxiCN hard/soft tuple F1 and the TBO metrics.

STATE-ToxiCN follows the benchmark's own `evaluate.ipynb`: per post, every predicted tuple is
compared with the gold tuples in order and takes the first one that matches, which is then
removed (each gold tuple matched at most once); micro precision/recall/F1 over the corpus.
Hard = exact equality of every compared field; soft = `SequenceMatcher(None, a, b).ratio()
>= 0.5` on target and argument, exact on group and label.

TBO (no official scorer): micro F1 with exact matching for Target, Argument, Targeted
(target + harmful), NTA (target + argument), TA (target + argument + harmful); Harm = macro F1
of the harmful label over predicted tuples whose target matches a gold target (one-to-one).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path

from rebuttal.data.gold import GoldPost, state_toxicn_tuples
from rebuttal.data.vocab import OUTPUT_IMPLICIT, parse_label
from rebuttal.types import SparTuple

SOFT_THRESHOLD = 0.5
ZH_FIELDS = {  # metric → compared fields, in the paper's column order
    "target": ("target",),
    "argument": ("argument",),
    "pair": ("target", "argument"),
    "triple": ("target", "argument", "label"),
    "quad": ("target", "argument", "group", "label"),
}
TBO_FIELDS = {
    "target": ("target",),
    "argument": ("argument",),
    "targeted": ("target", "label"),
    "nta": ("target", "argument"),
    "ta": ("target", "argument", "label"),
}
SOFT_FIELDS = ("target", "argument")


@dataclass
class PRF:
    tp: int = 0
    predicted: int = 0
    gold: int = 0

    @property
    def precision(self) -> float:
        return self.tp / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.tp / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_dict(self) -> dict:
        return {"precision": round(self.precision, 6), "recall": round(self.recall, 6),
                "f1": round(self.f1, 6), "tp": self.tp, "predicted": self.predicted, "gold": self.gold}


def soft_equal(a: str, b: str, threshold: float = SOFT_THRESHOLD) -> bool:
    return SequenceMatcher(None, a, b).ratio() >= threshold


def _value(t: SparTuple, name: str) -> object:
    value = getattr(t, name)
    return value.strip() if isinstance(value, str) else value


def tuple_matcher(fields: tuple[str, ...], soft: bool, threshold: float = SOFT_THRESHOLD
                  ) -> Callable[[SparTuple, SparTuple], bool]:
    def equal(pred: SparTuple, gold: SparTuple) -> bool:
        for name in fields:
            a, b = _value(pred, name), _value(gold, name)
            if soft and name in SOFT_FIELDS:
                if not soft_equal(str(a), str(b), threshold):
                    return False
            elif a != b:
                return False
        return True
    return equal


def greedy_matches(preds: list[SparTuple], golds: list[SparTuple],
                   equal: Callable[[SparTuple, SparTuple], bool]) -> list[tuple[int, int]]:
    """(pred index, gold index) pairs: each prediction takes the first unused gold it matches."""
    used = [False] * len(golds)
    pairs = []
    for i, pred in enumerate(preds):
        for j, gold in enumerate(golds):
            if not used[j] and equal(pred, gold):
                used[j] = True
                pairs.append((i, j))
                break
    return pairs


def micro_prf(pairs: Iterable[tuple[list[SparTuple], list[SparTuple]]],
              equal: Callable[[SparTuple, SparTuple], bool]) -> PRF:
    total = PRF()
    for preds, golds in pairs:
        total.predicted += len(preds)
        total.gold += len(golds)
        total.tp += len(greedy_matches(preds, golds, equal))
    return total


@dataclass
class Predictions:
    tuples: dict[str, list[SparTuple]] = field(default_factory=dict)
    error_ids: list[str] = field(default_factory=list)
    bad_rows: int = 0


def _tuple_from_dict(raw: dict) -> SparTuple:
    label_raw = next((raw[k] for k in ("label", "harmful", "hateful") if k in raw), 0)
    group = raw.get("group")
    return SparTuple(target=str(raw.get("target") or OUTPUT_IMPLICIT).strip() or OUTPUT_IMPLICIT,
                     argument=str(raw.get("argument") or "").strip(),
                     label=parse_label(label_raw), group=None if group is None else str(group).strip())


def read_predictions(path: str | Path) -> Predictions:
    """`--pred` files: our batch output (JSONL SparResult rows) or a gold-format file."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"prediction file not found: {path}")
    raw = path.read_text(encoding="utf-8", errors="replace")
    out = Predictions()
    if raw.lstrip().startswith("["):
        rows = json.loads(raw)
    else:
        rows = []
        for line in raw.splitlines():
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    out.bad_rows += 1
    for row in rows:
        if not isinstance(row, dict) or "id" not in row:
            out.bad_rows += 1
            continue
        row_id = str(row["id"])
        if row.get("status") == "error":
            out.error_ids.append(row_id)
            out.tuples[row_id] = []
            continue
        try:
            if "Q1 Target" in row:
                out.tuples[row_id] = state_toxicn_tuples(row)
            else:
                out.tuples[row_id] = [_tuple_from_dict(t) for t in row.get("tuples") or []]
        except (ValueError, TypeError, AttributeError):
            out.bad_rows += 1
            out.tuples[row_id] = []
    return out


def _aligned(preds: Predictions, gold: list[GoldPost], *, with_group: bool
             ) -> list[tuple[list[SparTuple], list[SparTuple]]]:
    aligned = []
    for post in gold:
        predicted = preds.tuples.get(post.id, [])
        if not with_group:  # three-field tracks: the group plays no part
            predicted = [t.model_copy(update={"group": None}) for t in predicted]
            golds = [t.model_copy(update={"group": None}) for t in post.tuples]
        else:
            golds = post.tuples
        aligned.append((predicted, golds))
    return aligned


def _coverage(preds: Predictions, gold: list[GoldPost]) -> dict:
    gold_ids = {p.id for p in gold}
    return {
        "posts": len(gold),
        "predicted_posts": sum(1 for p in gold if p.id in preds.tuples),
        "missing_predictions": sum(1 for p in gold if p.id not in preds.tuples),
        "error_rows": len(preds.error_ids),
        "unknown_ids": sum(1 for i in preds.tuples if i not in gold_ids),
        "bad_rows": preds.bad_rows,
    }


def score_state_toxicn(preds: Predictions, gold: list[GoldPost], *, quad: bool = False) -> dict:
    """Hard and soft micro P/R/F1 for Target, Argument, T-A pair, T-A-H triple (and quad)."""
    aligned = _aligned(preds, gold, with_group=quad)
    names = [n for n in ZH_FIELDS if quad or n != "quad"]
    metrics = {}
    for name in names:
        metrics[name] = {
            mode: micro_prf(aligned, tuple_matcher(ZH_FIELDS[name], soft=mode == "soft")).as_dict()
            for mode in ("hard", "soft")
        }
    f1s = [metrics[n][m]["f1"] for n in names for m in ("hard", "soft")]
    return {"track": "zh-quad" if quad else "zh-main", **_coverage(preds, gold), "metrics": metrics,
            "average": round(sum(f1s) / len(f1s), 6)}


def harm_macro_f1(aligned: list[tuple[list[SparTuple], list[SparTuple]]]) -> tuple[float, int]:
    """Macro F1 of the harmful label on target-matched pairs (same argument preferred)."""
    gold_labels, pred_labels = [], []
    for preds, golds in aligned:
        used = [False] * len(golds)
        for pred in preds:
            free = [j for j, g in enumerate(golds) if not used[j] and g.target.strip() == pred.target.strip()]
            if not free:
                continue
            same_arg = [j for j in free if golds[j].argument.strip() == pred.argument.strip()]
            j = (same_arg or free)[0]
            used[j] = True
            gold_labels.append(golds[j].label)
            pred_labels.append(pred.label)
    if not gold_labels:
        return 0.0, 0
    scores = []
    for cls in sorted(set(gold_labels) | set(pred_labels)):
        tp = sum(1 for g, p in zip(gold_labels, pred_labels) if g == p == cls)
        fp = sum(1 for g, p in zip(gold_labels, pred_labels) if p == cls and g != cls)
        fn = sum(1 for g, p in zip(gold_labels, pred_labels) if g == cls and p != cls)
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return sum(scores) / len(scores), len(gold_labels)


def score_tbo(preds: Predictions, gold: list[GoldPost]) -> dict:
    """Target, Argument, Targeted, NTA, TA (micro, exact) and Harm; average of the six F1s."""
    aligned = _aligned(preds, gold, with_group=False)
    metrics = {name: micro_prf(aligned, tuple_matcher(fields, soft=False)).as_dict()
               for name, fields in TBO_FIELDS.items()}
    harm, matched = harm_macro_f1(aligned)
    metrics["harm"] = {"f1": round(harm, 6), "matched_targets": matched}
    f1s = [m["f1"] for m in metrics.values()]
    return {"track": "en-main", **_coverage(preds, gold), "metrics": metrics,
            "average": round(sum(f1s) / len(f1s), 6)}


def score(preds: Predictions, gold: list[GoldPost], track: str) -> dict:
    if track == "en-main":
        return score_tbo(preds, gold)
    if track in ("zh-main", "zh-quad"):
        return score_state_toxicn(preds, gold, quad=track == "zh-quad")
    raise ValueError(f"unknown track {track!r}; choose en-main, zh-main or zh-quad")


LABELS = {"target": "Target", "argument": "Argument", "pair": "T-A pair", "triple": "T-A-H",
          "quad": "Quad", "targeted": "Targeted", "nta": "NTA", "ta": "TA", "harm": "Harm"}


def format_report(report: dict) -> str:
    """A markdown table in the paper's layout (F1 × 100; hard / soft on the Chinese tracks)."""
    metrics = report["metrics"]
    names = list(metrics)
    header = "| " + " | ".join(LABELS[n] for n in names) + " | avg |"
    rule = "|" + "---|" * (len(names) + 1)
    if report["track"] == "en-main":
        cells = [f"{metrics[n]['f1'] * 100:.2f}" for n in names]
    else:
        cells = [f"{metrics[n]['hard']['f1'] * 100:.2f} / {metrics[n]['soft']['f1'] * 100:.2f}" for n in names]
    row = "| " + " | ".join(cells) + f" | {report['average'] * 100:.2f} |"
    notes = (f"{report['posts']} gold posts, {report['missing_predictions']} without a prediction, "
             f"{report['error_rows']} error rows, {report['unknown_ids']} predictions with unknown ids")
    return f"track {report['track']}: {notes}\n\n{header}\n{rule}\n{row}\n"
