"""Single-call baselines on the same backbone (FIRE paper, appendix A.11 shape):
zero-shot, few-shot (5 fixed exemplars, one per category) and retrieval-based (the top-1 most
similar memory record with its category and evidence)."""

from __future__ import annotations

from rebuttal.fire.coherence import flag_reasoning
from rebuttal.fire.prompting import BaselineOutput, Exemplar, prompt, shared_prefix
from rebuttal.fire.generator import reply_problems
from rebuttal.llm import ChatModel, LLMError, StructuredOutputError, generate_object
from rebuttal.types import Analysis, EvidenceItem, FireResult, HateType, InputError, Reply, TraceStep, check_post

BASELINES = ("zero-shot", "few-shot", "retrieval")


def few_shot_exemplars(memory) -> list[Exemplar]:
    """The first record (by id) of each category: fixed, so every run sees the same five."""
    chosen = []
    for category in HateType:
        records = sorted((r for r in memory.records if r.category == category and r.is_hateful), key=lambda r: r.id)
        if records:
            chosen.append(Exemplar.from_record(records[0]))
    return chosen


class Baseline:
    def __init__(self, kind: str, model: ChatModel, memory=None, max_tokens: int = 400):
        if kind not in BASELINES:
            raise ValueError(f"unknown baseline {kind!r}; choose from {', '.join(BASELINES)}")
        if kind != "zero-shot" and memory is None:
            raise ValueError(f"the {kind} baseline needs a memory")
        self.kind, self.model, self.memory, self.max_tokens = kind, model, memory, max_tokens
        self._fixed = few_shot_exemplars(memory) if kind == "few-shot" else []

    def respond(self, text: object, id: str | None = None) -> FireResult:
        try:
            post = check_post(text)
        except InputError as exc:
            return FireResult(id=id, text="", system=self.kind, status="error", message=f"invalid input: {exc}")
        result = FireResult(id=id, text=post, system=self.kind, status="ok")
        evidence: list[EvidenceItem] = []
        if self.kind == "zero-shot":
            exemplars, note = [], "none: zero-shot"
        elif self.kind == "few-shot":
            exemplars, note = self._fixed, "five fixed examples, one per category"
        else:
            record, similarity = self.memory.nearest(post, 1)[0]
            exemplars, note = [Exemplar.from_record(record)], f"the most similar record (cosine {similarity:.2f})"
            if record.evidence:
                evidence = [EvidenceItem(id=f"memory:{record.id}", text=record.evidence,
                                         source=record.evidence_source or "memory record", url=record.evidence_url)]
        task = prompt("baseline")
        messages = shared_prefix(post, exemplars, note, with_evidence=self.kind == "retrieval", with_replies=True)
        messages.append({"role": "user", "content": task.template.strip()})
        step = result.trace.add(TraceStep(stage=self.kind, model=self.model.name, prompt_version=task.version,
                                          attempts=0))
        try:
            out = generate_object(self.model, messages, BaselineOutput, max_tokens=self.max_tokens)
        except StructuredOutputError as exc:
            step.record(exc)
            result.status, result.message = "error", f"invalid model output: {exc}"
            return result
        except LLMError as exc:
            result.status, result.message = "error", f"model backend failed: {exc}"
            return result
        step.record(out)
        value = out.value
        result.analysis = Analysis(
            is_hateful=True, target_group=value.target_group, category=value.hs_type,
            reasoning=value.analyst_reasoning, search_query=value.retrieval_query,
        )
        if value.retrieved_evidence and self.kind != "retrieval":
            # Model-written "evidence" is not retrieved: keep it in the trace, never cite it.
            step.notes.append(f"model-written evidence (not retrieved): {value.retrieved_evidence[:300]}")
        result.evidence = evidence
        result.reply = Reply(text=value.counterspeech.strip(), strategy=value.hs_type.strategy)
        problems = reply_problems(result.reply.text, post, evidence)
        if problems:
            step.notes.append("reply check: " + "; ".join(problems))
            result.trace.flag("reply_check_failed")
        flag_reasoning(value.analyst_reasoning, result.trace)
        if result.trace.flags:
            result.status = "flagged"
        return result
