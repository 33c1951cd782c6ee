"""FIRE phase 1 (HEAL): the Hate Speech Analyst.

The judgements a 1.5B model makes badly are taught from data (assessor.py): whether the post is
hateful (the gate) and its category (a classifier over MiniLM vectors and the memory's scores).
The LLM writes what it does well: the target group, the reasoning and the search query, and it
casts a second vote on hatefulness (category `none`): a reply is written only when the gate and
the LLM both call the post hateful, and a disagreement is flagged for a reviewer.

Category policies:
- `learned` (default): the learned model's category (benchmarks/results/analyst.md).
- `memory`: the memory's t̂ (the previous default).
- `constrained` (the paper's design): among the memory's candidates (t̂ when ρ is high, the top
  two when ambiguous); the model may leave them only with a stated reason.
- `free`: the model's own category.
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum

from rebuttal.fire.assessor import Assessment
from rebuttal.fire.prompting import AnalystOutput, ask_letter, post_prefix, prompt, quote_post
from rebuttal.llm import ChatModel, Message, StructuredOutputError, generate_object
from rebuttal.types import Analysis, CategoryVote, HateType, Trace, TraceStep


class CategoryPolicy(StrEnum):
    learned = "learned"  # the trained category model (with the memory's scores)
    memory = "memory"  # always the memory's t̂
    constrained = "constrained"  # the memory's candidates; leave them only with a reason
    free = "free"  # the model's own choice


def given_category(assessment: Assessment, policy: CategoryPolicy) -> HateType | None:
    """The category the policy imposes before the LLM speaks (None: the LLM chooses)."""
    if policy is CategoryPolicy.learned:
        return assessment.category
    if policy is CategoryPolicy.memory and assessment.view is not None:
        return assessment.view.predicted
    return None


def category_rule(assessment: Assessment, policy: CategoryPolicy) -> str:
    given = given_category(assessment, policy)
    view = assessment.view
    if given is not None:
        return (f"The category is {given.value}. Explain the post under it, or answer none if the post "
                "is not hateful at all.")
    if policy is CategoryPolicy.constrained and view is not None:
        if view.ambiguous:
            first, second = view.candidates[:2]
            return (f"The memory is unsure (purity {view.purity:.2f}): the category is either {first.value} "
                    f"or {second.value}. Choose one of the two and say why in reasoning.")
        return (f"The memory suggests the category {view.predicted.value} (purity {view.purity:.2f}). Keep it "
                "unless the post clearly fits another category; if you change it, give override_reason.")
    return "Choose the category yourself."


def decide_category(proposed: HateType, override_reason: str | None, assessment: Assessment,
                    policy: CategoryPolicy) -> tuple[HateType, str | None]:
    """The final category and, when it differs from the model's, a note for the trace."""
    given = given_category(assessment, policy)
    if given is not None:
        return given, None if proposed == given else f"model said {proposed.value}; {policy.value} policy keeps {given.value}"
    view = assessment.view
    if policy is not CategoryPolicy.constrained or view is None or proposed in view.candidates:
        return proposed, None
    if override_reason and override_reason.strip():
        return proposed, f"override of {view.predicted.value}: {override_reason.strip()}"
    return view.predicted, f"model chose {proposed.value} outside the candidates without a reason"


class GateVote(StrEnum):
    """What the LLM's vote on hatefulness is, where the gate lets it decide (below `sure`)."""

    stance = "stance"  # one more one-letter call: attacks / supports / quotes to reject / neutral (default)
    analyst = "analyst"  # the analyst answers category `none`


def ask_stance(model: ChatModel, post: str, trace: Trace) -> bool:
    """The stance question, on its own short system text: after FIRE's (a counterspeech team and
    the hate categories) the 1.5B model called almost every post an attack. True unless the
    model answers B, C or D; any other answer is no veto, noted in the trace."""
    answer, completion = ask_letter(model, "stance", 3, post=quote_post(post))
    step = trace.add(TraceStep(stage="stance", model=model.name, prompt_version=prompt("stance").version,
                               latency_s=completion.latency_s, usage=completion.usage))
    chosen = answer in ("A", "B", "C", "D")
    step.notes.append(f"answer {completion.text.strip()[:12]!r}" + ("" if chosen else ": not a choice, so no veto"))
    return answer not in ("B", "C", "D")


class Analyst:
    def __init__(self, model: ChatModel, policy: CategoryPolicy = CategoryPolicy.learned, max_tokens: int = 200,
                 vote: GateVote = GateVote.stance):
        self.model = model
        self.policy = policy
        self.max_tokens = max_tokens
        self.vote = GateVote(vote)

    def messages(self, post: str, assessment: Assessment) -> tuple[list[Message], str]:
        task = prompt("analyst")
        text = task.render(category_rule=category_rule(assessment, self.policy)).strip()
        return [*post_prefix(post), {"role": "user", "content": text}], task.version

    def run(self, post: str, assessment: Assessment, trace: Trace) -> Analysis:
        messages, version = self.messages(post, assessment)
        step = trace.add(TraceStep(stage="analyst", model=self.model.name, prompt_version=version, attempts=0))
        try:
            result = generate_object(self.model, messages, AnalystOutput, max_tokens=self.max_tokens)
        except StructuredOutputError as exc:
            step.record(exc)
            trace.flag("analyst_fallback")
            return self.fallback(post, assessment, step, str(exc))
        step.record(result)
        output = result.value
        step.notes.append(f"model category: {output.category.value}")
        llm_hateful = output.hate_type is not None
        gate = assessment.gate
        if self.vote is GateVote.stance and gate is not None and gate.hateful and gate.score < gate.sure:
            llm_hateful = ask_stance(self.model, post, trace)  # only where the vote can change the outcome
        proposed = output.hate_type or given_category(assessment, self.policy) or HateType.nonfactual
        category, note = decide_category(proposed, output.override_reason, assessment, self.policy)
        if note:
            step.notes.append(note)
        query = (output.search_query or "").strip() or None
        if category.needs_evidence and not query:
            query = post[:160]
            step.notes.append("no search query from the model: the post is the query")
        return self._analysis(assessment, category, output, llm_hateful, query)

    def _analysis(self, assessment: Assessment, category: HateType, output: AnalystOutput,
                  llm_hateful: bool, query: str | None) -> Analysis:
        gate = assessment.gate.model_copy(update={"llm_hateful": llm_hateful}) if assessment.gate else None
        votes = [*assessment.votes]
        if output.hate_type is not None:
            votes.append(CategoryVote(source="llm", category=output.hate_type))
        # A reply needs the gate; the LLM's "not hateful" vetoes it only below the gate's `sure`
        # score (above it the 1.5B model's veto was wrong on blunt silver dev posts calling a
        # group criminals): there the reply is written and flagged for the reviewer instead.
        hateful = llm_hateful if gate is None else gate.hateful and (llm_hateful or gate.score >= gate.sure)
        return Analysis(
            is_hateful=hateful, target_group=output.target_group.strip() or "Others", category=category,
            reasoning=output.reasoning.strip(), search_query=query if category.needs_evidence else None,
            confidence=assessment.confidence if category == assessment.category else None,
            votes=votes, gate=gate,
        )

    def fallback(self, post: str, assessment: Assessment, step: TraceStep, error: str) -> Analysis:
        """Invalid output after the re-ask: the learned category (or the memory's) stands."""
        category = assessment.category or HateType.nonfactual
        exemplars = assessment.query.exemplars if assessment.query is not None else []
        targets = Counter(r.target_group for r in exemplars if r.category == category)
        step.notes.append(f"analyst output invalid; the learned category stands: {error[:200]}")
        return Analysis(
            is_hateful=assessment.hateful if assessment.hateful is not None else True,
            target_group=targets.most_common(1)[0][0] if targets else "Others",
            category=category,
            reasoning=f"Fallback: the analyst's output was invalid, so the learned category ({category.value}) was used.",
            search_query=post[:160] if category.needs_evidence else None,
            confidence=assessment.confidence, votes=assessment.votes, gate=assessment.gate,
        )

