"""FIRE phase 1 (HEAL): the Hate Speech Analyst.

Small models are weak judges of category on their own, so the memory decides or constrains it:
- `memory` (default): the memory's t̂. Measured on silver dev it was the most accurate policy
  (0.70 with the 1.5B on 20 items and with the 0.5B on 50; `constrained` 0.60 / 0.70, `free`
  0.60 / 0.68; benchmarks/results/fire.md). The model's own pick stays in the trace.
- `constrained` (the paper's design): among the memory's candidates (t̂ when ρ is high, the top
  two when ambiguous); the model may leave them only with a stated reason.
- `free`: the model's own category.
Whatever the policy, the model decides whether the post is hateful at all (category `none`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from rebuttal.fire.prompting import AnalystOutput, Exemplar, prompt, shared_prefix
from rebuttal.llm import ChatModel, Message, StructuredOutputError, generate_object
from rebuttal.types import Analysis, HateType, MemoryView, Trace, TraceStep


class CategoryPolicy(StrEnum):
    memory = "memory"  # always the memory's t̂
    constrained = "constrained"  # the memory's candidates; leave them only with a reason
    free = "free"  # the model's own choice


@dataclass
class AnalystTurn:
    analysis: Analysis
    messages: list[Message]  # the conversation so far, for the generator to continue
    answer: str  # the analyst's JSON answer as it goes back into the conversation


def candidate_rule(view: MemoryView, policy: CategoryPolicy) -> str:
    if policy is CategoryPolicy.memory:
        runner_up = f" over {view.candidates[1].value}" if view.ambiguous else ""
        return (f"The memory assigns the category {view.predicted.value}{runner_up} (purity {view.purity:.2f}); "
                "explain the post under it unless the post is not hateful at all.")
    if view.ambiguous:
        first, second = view.candidates[:2]
        return (
            f"The memory is unsure (purity {view.purity:.2f}): the category is either {first.value} "
            f"or {second.value}. Choose one of the two and say why in reasoning."
        )
    return (
        f"The memory suggests the category {view.predicted.value} (purity {view.purity:.2f}). "
        "Keep it unless the post clearly fits another category; if you change it, give override_reason."
    )


def decide_category(
    proposed: HateType, override_reason: str | None, view: MemoryView | None, policy: CategoryPolicy
) -> tuple[HateType, str | None]:
    """The final category and, when it differs from the model's, a note for the trace."""
    if view is None or policy is CategoryPolicy.free:
        return proposed, None
    if policy is CategoryPolicy.memory:
        note = None if proposed == view.predicted else f"model said {proposed.value}; memory policy keeps {view.predicted.value}"
        return view.predicted, note
    if proposed in view.candidates:
        return proposed, None
    if override_reason and override_reason.strip():
        return proposed, f"override of {view.predicted.value}: {override_reason.strip()}"
    return view.predicted, f"model chose {proposed.value} outside the candidates without a reason"


class Analyst:
    def __init__(self, model: ChatModel, policy: CategoryPolicy = CategoryPolicy.memory,
                 max_tokens: int = 220):
        self.model = model
        self.policy = policy
        self.max_tokens = max_tokens

    def messages(self, post: str, exemplars: list[Exemplar], view: MemoryView | None) -> tuple[list[Message], str]:
        if view is None:
            task = prompt("analyst_free")
            text = task.template.strip()
            note = "none: memory disabled"
        else:
            task = prompt("analyst")
            text = task.render(candidate_rule=candidate_rule(view, self.policy)).strip()
            note = f"nearest records, purity {view.purity:.2f}"
        messages = shared_prefix(post, exemplars, note)
        messages.append({"role": "user", "content": text})
        return messages, task.version

    def run(self, post: str, exemplars: list[Exemplar], view: MemoryView | None, trace: Trace) -> AnalystTurn:
        messages, version = self.messages(post, exemplars, view)
        step = trace.add(TraceStep(stage="analyst", model=self.model.name, prompt_version=version))
        try:
            result = generate_object(self.model, messages, AnalystOutput, max_tokens=self.max_tokens)
        except StructuredOutputError as exc:
            step.latency_s, step.usage, step.attempts = exc.latency_s, exc.usage, exc.attempts
            analysis = self.fallback(post, exemplars, view, step, str(exc))
            trace.flag("analyst_fallback")
            return AnalystTurn(analysis, messages, analysis.model_dump_json())
        step.latency_s, step.usage, step.attempts = result.latency_s, result.usage, result.attempts
        output = result.value
        step.notes.append(f"model category: {output.category.value}")
        if output.hate_type is None:  # the model's "none": not hateful, whatever the memory says
            category, note = (view.predicted if view else HateType.nonfactual), "model: not hateful"
        else:
            category, note = decide_category(output.hate_type, output.override_reason, view, self.policy)
        if note:
            step.notes.append(note)
        query = (output.search_query or "").strip() or None
        if category.needs_evidence and not query:
            query = post[:160]
            step.notes.append("no search query from the model: the post is the query")
        analysis = Analysis(
            is_hateful=output.hate_type is not None, target_group=output.target_group.strip() or "Others",
            category=category, reasoning=output.reasoning.strip(),
            search_query=query if category.needs_evidence else None,
        )
        answer = json.dumps(analysis.model_dump(mode="json", exclude={"search_query"}), ensure_ascii=False)
        return AnalystTurn(analysis, messages, answer)

    def fallback(self, post: str, exemplars: list[Exemplar], view: MemoryView | None, step: TraceStep,
                 error: str) -> Analysis:
        """Invalid output after the re-ask: fall back to the memory's t̂ (FIRE issue, phase 1)."""
        category = view.predicted if view else HateType.nonfactual
        targets = Counter(ex.target_group for ex in exemplars if ex.category == category)
        step.notes.append(f"analyst output invalid; fell back to the memory's category: {error[:200]}")
        return Analysis(
            is_hateful=True,
            target_group=targets.most_common(1)[0][0] if targets else "Others",
            category=category,
            reasoning=f"Fallback: the analyst's output was invalid, so the memory's nearest category ({category.value}) was used.",
            search_query=post[:160] if category.needs_evidence else None,
        )
