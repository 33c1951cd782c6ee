"""Read prediction and gold files for counterspeech evaluation and line them up by id.

Predictions are either `rebuttal run` rows (`FireResult.model_dump(mode="json")`) or simple
baseline rows `{id, category, counterspeech}`. Gold rows follow the silver FactualCS format.
Nothing is dropped silently: bad rows, duplicates, missing items and rows without a reply
are all listed in `Alignment`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rebuttal.data.batch import read_json_rows
from rebuttal.types import HateType

CATEGORIES = tuple(t.value for t in HateType)
# Names used in the FIRE paper's prompts and some baselines, mapped to ours.
_CATEGORY_ALIASES = {
    "misinfo_hate": "misinformation", "misinfo": "misinformation",
    "stereotype_hate": "stereotype", "conspiracy_hate": "conspiracy",
    "dehumanization_hate": "dehumanization", "dehumanizing": "dehumanization",
    "nonfactual_hate": "nonfactual", "non-factual": "nonfactual", "non_factual": "nonfactual",
}


def normalise_category(value: object) -> str | None:
    """One of CATEGORIES, or None when absent or unknown."""
    if not isinstance(value, str):
        return None
    key = value.strip().lower()
    key = _CATEGORY_ALIASES.get(key, key)
    return key if key in CATEGORIES else None


@dataclass
class GoldItem:
    id: str
    category: str | None
    references: list[str]
    evidence: str | None  # None for non-factual categories: excluded from FSc


@dataclass
class Prediction:
    id: str
    status: str  # ok / flagged / not_hateful / error (simple rows: ok)
    category: str | None
    reply: str | None  # None = no reply (error, not hateful, empty)
    message: str | None = None


@dataclass
class FileProblems:
    """Rows of one file that could not be used, with the reason."""

    path: str
    bad_rows: list[str] = field(default_factory=list)  # "line 3: invalid JSON ..."
    duplicate_ids: list[str] = field(default_factory=list)


class EvalInputError(ValueError):
    """A prediction or gold file cannot be used at all (missing, empty)."""


def _clean_text(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _evidence_text(value: object) -> str | None:
    """Gold evidence is a string, a list of sentences, or null."""
    if isinstance(value, list):
        parts = [v.get("text") if isinstance(v, dict) else v for v in value]
        value = " ".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    return _clean_text(value)


def _read_rows(path: Path) -> tuple[list[tuple[int, dict]], FileProblems]:
    problems = FileProblems(path=str(path))
    try:
        rows = list(read_json_rows(Path(path)))
    except ValueError as exc:  # InputFileError and friends
        raise EvalInputError(str(exc)) from None
    good: list[tuple[int, dict]] = []
    for number, row in enumerate(rows, 1):
        if isinstance(row, Exception):
            problems.bad_rows.append(str(row))
        elif not isinstance(row, dict):
            problems.bad_rows.append(f"row {number}: a JSON {type(row).__name__}, expected an object")
        elif row.get("id") in (None, ""):
            problems.bad_rows.append(f"row {number}: no `id`")
        else:
            good.append((number, row))
    if not good:
        raise EvalInputError(f"{path}: no usable rows ({len(problems.bad_rows)} bad rows)")
    return good, problems


def load_gold(path: str | Path) -> tuple[dict[str, GoldItem], FileProblems]:
    rows, problems = _read_rows(Path(path))
    gold: dict[str, GoldItem] = {}
    for number, row in rows:
        item_id = str(row["id"])
        if item_id in gold:
            problems.duplicate_ids.append(item_id)
            continue
        refs = [t for t in (_clean_text(r) for r in row.get("counterspeech_refs") or []) if t]
        first = _clean_text(row.get("counterspeech"))
        if first and first not in refs:
            refs.insert(0, first)
        if not refs:
            problems.bad_rows.append(f"row {number} ({item_id}): no reference counterspeech")
            continue
        category = normalise_category(row.get("hs_type", row.get("category")))
        gold[item_id] = GoldItem(item_id, category, refs, _evidence_text(row.get("evidence")))
    return gold, problems


def _prediction(row: dict) -> Prediction:
    item_id = str(row["id"])
    if "status" in row or "analysis" in row or "reply" in row:  # a FireResult row
        analysis = row.get("analysis") or {}
        reply = row.get("reply") or {}
        status = str(row.get("status") or "ok")
        return Prediction(
            id=item_id, status=status,
            category=normalise_category(analysis.get("category") if isinstance(analysis, dict) else None),
            reply=_clean_text(reply.get("text") if isinstance(reply, dict) else None),
            message=row.get("message"),
        )
    reply = _clean_text(row.get("counterspeech", row.get("reply", row.get("text"))))
    return Prediction(
        id=item_id, status="ok" if reply else "empty",
        category=normalise_category(row.get("category", row.get("hs_type"))), reply=reply,
    )


def load_predictions(path: str | Path) -> tuple[dict[str, Prediction], FileProblems]:
    rows, problems = _read_rows(Path(path))
    predictions: dict[str, Prediction] = {}
    for _, row in rows:
        prediction = _prediction(row)
        if prediction.id in predictions:
            problems.duplicate_ids.append(prediction.id)  # keep the first, report the rest
            continue
        predictions[prediction.id] = prediction
    return predictions, problems


@dataclass
class Alignment:
    """Which gold items a system answered, and why the others are not scored."""

    scored: list[str]  # gold ids with a reply, in gold order
    missing_in_pred: list[str]  # gold ids with no prediction row
    no_reply: dict[str, str]  # gold id -> status (error, not_hateful, empty...)
    extra_in_pred: list[str]  # prediction ids absent from gold (not scored)
    no_category: list[str]  # scored ids whose prediction has no category

    @property
    def coverage(self) -> float:
        total = len(self.scored) + len(self.missing_in_pred) + len(self.no_reply)
        return len(self.scored) / total if total else 0.0


def align(gold: dict[str, GoldItem], predictions: dict[str, Prediction]) -> Alignment:
    scored, missing, no_reply, no_category = [], [], {}, []
    for item_id in gold:
        prediction = predictions.get(item_id)
        if prediction is None:
            missing.append(item_id)
        elif prediction.reply is None:
            no_reply[item_id] = prediction.status if prediction.status != "ok" else "empty"
        else:
            scored.append(item_id)
            if prediction.category is None:
                no_category.append(item_id)
    extra = [item_id for item_id in predictions if item_id not in gold]
    return Alignment(scored, missing, no_reply, extra, no_category)
