"""The shapes of a FIRE evaluation: which metrics exist and what a report holds (per item,
per system, and the whole run). `fire_metrics` computes them; `report` renders them."""

from __future__ import annotations

from pydantic import BaseModel, Field

from rebuttal.eval.judges import JudgeInfo
from rebuttal.eval.significance import PairedTest


class MetricSpec(BaseModel):
    key: str
    label: str
    higher_is_better: bool
    description: str


METRICS = [
    MetricSpec(key="rouge1", label="R-1", higher_is_better=True, description="ROUGE-1 F1, best reference"),
    MetricSpec(key="rouge2", label="R-2", higher_is_better=True, description="ROUGE-2 F1, best reference"),
    MetricSpec(key="rougeL", label="R-L", higher_is_better=True, description="ROUGE-L F1, best reference"),
    MetricSpec(key="bertscore", label="BS", higher_is_better=True, description="BERTScore F1 (MiniLM)"),
    MetricSpec(key="meteor", label="M", higher_is_better=True, description="METEOR (NLTK, WordNet)"),
    MetricSpec(key="repetition", label="R", higher_is_better=False,
               description="share of a reply's word trigrams found in another reply of the system"),
    MetricSpec(key="cosim", label="CoSim", higher_is_better=True,
               description="cosine of MiniLM sentence embeddings, best reference"),
    MetricSpec(key="toxicity", label="T", higher_is_better=False, description="toxicity judge probability"),
    MetricSpec(key="novelty", label="Nov", higher_is_better=True,
               description="1 - max token-set Jaccard with a reference"),
    MetricSpec(key="diversity", label="Div", higher_is_better=True, description="unique / total tokens"),
    MetricSpec(key="catacc", label="CatAcc", higher_is_better=True,
               description="gold category == predicted category == detected strategy"),
    MetricSpec(key="fsc", label="FSc", higher_is_better=True,
               description="reply entailed by the gold evidence (factual items only)"),
]
METRIC_KEYS = [m.key for m in METRICS]
LOWER_IS_BETTER = {m.key for m in METRICS if not m.higher_is_better}


class ItemScores(BaseModel):
    id: str
    gold_category: str | None
    pred_category: str | None
    detected_strategy: str | None = None
    fact_label: str | None = None
    scores: dict[str, float | None]


class SystemScores(BaseModel):
    name: str
    path: str
    n_gold: int
    n_scored: int
    coverage: float
    missing_in_pred: list[str]
    no_reply: dict[str, str]
    extra_in_pred: list[str]
    no_category: list[str]
    bad_rows: list[str]
    duplicate_ids: list[str]
    means: dict[str, float | None]
    counts: dict[str, int]
    by_category: dict[str, dict[str, float | None]]
    category_counts: dict[str, int]
    confusion: dict[str, dict[str, int]]  # gold category -> predicted category ("none") -> n
    category_accuracy: float | None  # predicted == gold, one part of CatAcc
    strategy_agreement: float | None  # detected strategy == predicted, the other part
    fsc_no_evidence: int  # scored items excluded from FSc because gold evidence is null
    fsc_judge_failures: list[str]
    items: list[ItemScores]


class EvalReport(BaseModel):
    created: str
    gold_path: str
    gold_items: int
    gold_problems: list[str]
    metrics: list[MetricSpec] = Field(default_factory=lambda: list(METRICS))
    systems: list[SystemScores]
    tests: list[PairedTest] = Field(default_factory=list)
    judges: list[JudgeInfo] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
