"""The FIRE pipeline: memory → analyst → evidence → generator, with the paper's ablations."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from rebuttal.fire.analyst import Analyst, CategoryPolicy
from rebuttal.fire.generator import Generator, generator_task
from rebuttal.fire.prompting import (
    Exemplar, citation_rule, prompt, render_evidence, render_style_replies, shared_prefix,
)
from rebuttal.llm import ChatModel, LLMError
from rebuttal.types import (
    Analysis, EvidenceItem, FireResult, InputError, MemoryView, SourceTier, Trace, TraceStep,
    check_post,
)


@dataclass
class FireSettings:
    policy: CategoryPolicy = CategoryPolicy.memory  # the most accurate on silver dev (analyst.py)
    exemplars_shown: int = 3  # per category; prompts stay short on CPU
    evidence_k: int = 3
    use_memory: bool = True
    use_evidence: bool = True
    use_analyst: bool = True
    analyst_max_tokens: int = 220
    reply_max_tokens: int = 256

    @property
    def system_name(self) -> str:
        off = [name for name, on in (("memory", self.use_memory), ("evidence", self.use_evidence),
                                     ("analyst", self.use_analyst)) if not on]
        return "fire" + "".join(f"-no-{name}" for name in off)


ABLATIONS = ("no-memory", "no-evidence", "no-analyst")


def settings_for(ablations: Sequence[str] = (), **overrides) -> FireSettings:
    unknown = set(ablations) - set(ABLATIONS)
    if unknown:
        raise ValueError(f"unknown ablation(s) {sorted(unknown)}; choose from {', '.join(ABLATIONS)}")
    return FireSettings(
        use_memory="no-memory" not in ablations,
        use_evidence="no-evidence" not in ablations,
        use_analyst="no-analyst" not in ablations,
        **overrides,
    )


class FirePipeline:
    """`respond(text)` returns a review-ready FireResult; `analyze(text)` stops after HEAL."""

    def __init__(self, model: ChatModel, memory=None, searcher=None, settings: FireSettings | None = None):
        self.model = model
        self.settings = settings or FireSettings()
        self.memory = memory if self.settings.use_memory else None
        self.searcher = searcher if self.settings.use_evidence else None
        if not self.settings.use_analyst and self.memory is None:
            raise ValueError("the no-analyst ablation needs the memory to choose the category")
        self.analyst = Analyst(model, self.settings.policy, self.settings.analyst_max_tokens)
        self.generator = Generator(model, self.settings.reply_max_tokens)

    # ------------------------------------------------------------------ public API

    def analyze(self, text: object, id: str | None = None) -> FireResult:
        return self._run(text, id, reply=False)

    def respond(self, text: object, id: str | None = None) -> FireResult:
        return self._run(text, id, reply=True)

    def predict(self, texts: Sequence[object]) -> list[FireResult]:
        """One result per text, in order (the llama.cpp backend runs one at a time anyway)."""
        return [self.respond(text) for text in texts]

    # ------------------------------------------------------------------ stages

    def _run(self, text: object, id: str | None, reply: bool) -> FireResult:
        system = self.settings.system_name
        try:
            post = check_post(text)
        except InputError as exc:
            return FireResult(id=id, text=str(text)[:200] if isinstance(text, str) else "", system=system,
                              status="error", message=f"invalid input: {exc}")
        result = FireResult(id=id, text=post, system=system, status="ok")
        try:
            if self.settings.use_analyst:
                self._heal_and_care(result, reply)
            else:
                self._single_pass(result, reply)
        except LLMError as exc:
            result.status, result.message = "error", f"model backend failed: {exc}"
            return result
        if result.status == "ok" and result.trace.flags:
            result.status = "flagged"
            result.message = "needs a reviewer's attention: " + ", ".join(result.trace.flags)
        return result

    def _recall(self, post: str, trace: Trace) -> tuple[MemoryView | None, list[Exemplar], object]:
        if self.memory is None:
            return None, [], None
        started = time.perf_counter()
        query = self.memory.query(post)
        view = query.view()
        shown = []
        for category in view.candidates:
            per = self.settings.exemplars_shown if not view.ambiguous else max(1, self.settings.exemplars_shown - 1)
            shown += [Exemplar.from_record(r) for r in query.exemplars if r.category == category][:per]
        view.exemplar_ids = [ex.id for ex in shown]
        trace.add(TraceStep(
            stage="memory", latency_s=time.perf_counter() - started,
            notes=[f"t̂={view.predicted.value} ρ={view.purity:.2f}" + (" ambiguous" if view.ambiguous else "")],
        ))
        return view, shown, query

    def _heal_and_care(self, result: FireResult, reply: bool) -> None:
        view, exemplars, query = self._recall(result.text, result.trace)
        result.memory = view
        turn = self.analyst.run(result.text, exemplars, view, result.trace)
        result.analysis = turn.analysis
        if not turn.analysis.is_hateful:
            result.status = "not_hateful"
            result.message = f"No reply: the analyst judged the post not hateful. {turn.analysis.reasoning}"
            if view is not None and not view.ambiguous and query is not None and all(r.is_hateful for r in query.exemplars):
                # Safety first (no reply), but a reviewer should see the disagreement.
                result.trace.flag("memory_disagrees_not_hateful")
            return
        if turn.analysis.category.needs_evidence and turn.analysis.search_query:
            # The post's own words help the lexical half of the search when the query is vague.
            result.evidence = self.retrieve(f"{turn.analysis.search_query} {result.text}"[:300], result.trace)
        if not reply:
            return
        task, version = generator_task(turn.analysis, result.evidence, exemplars)
        conversation = [*turn.messages, {"role": "assistant", "content": turn.answer}]
        result.reply = self.generator.run(
            result.text, conversation, task, version, result.evidence,
            turn.analysis.category.strategy, result.trace,
        )

    def _single_pass(self, result: FireResult, reply: bool) -> None:
        """Ablation `no-analyst`: one generation with the same memory and evidence access."""
        view, exemplars, query = self._recall(result.text, result.trace)
        result.memory = view
        category = view.predicted
        neighbours = query.exemplars
        if sum(not r.is_hateful for r in neighbours) > len(neighbours) / 2:
            result.status = "not_hateful"
            result.message = "No reply: most of the nearest memory records are not hateful (no analyst in this ablation)."
            return
        targets = [ex.target_group for ex in exemplars if ex.category == category]
        result.analysis = Analysis(
            is_hateful=True, target_group=targets[0] if targets else "Others", category=category,
            reasoning="Single pass (no analyst): category from the memory.",
            search_query=result.text[:160] if category.needs_evidence else None,
        )
        if category.needs_evidence:
            result.evidence = self.retrieve(result.text[:160], result.trace)
        if not reply:
            return
        template = prompt("single_pass")
        task = template.render(
            category=category.value, strategy=category.strategy,
            style_block=render_style_replies(exemplars, category),
            evidence_block=render_evidence(result.evidence), citation_rule=citation_rule(result.evidence),
        ).strip()
        prefix = shared_prefix(result.text, exemplars, f"nearest records, purity {view.purity:.2f}")
        result.reply = self.generator.run(
            result.text, prefix, task, template.version, result.evidence, category.strategy, result.trace
        )

    def retrieve(self, query: str, trace: Trace) -> list[EvidenceItem]:
        """Evidence for a factual claim. A failed search degrades (no evidence, flagged for the
        reviewer) and never stops the reply: the generator is then told to cite nothing."""
        if self.searcher is None:
            return []
        from rebuttal.evidence import search_with_notes

        step = trace.add(TraceStep(stage="evidence", notes=[f"query: {query}"]))
        started = time.perf_counter()
        try:
            found, notes = search_with_notes(self.searcher, query, self.settings.evidence_k)
            step.notes += notes
            if any("failed" in note or "nothing" in note for note in notes):
                trace.flag("search_degraded")
        except Exception as exc:  # noqa: BLE001 - SearchError or anything a custom searcher raises
            found = []
            step.notes.append(f"search failed: {type(exc).__name__}: {str(exc)[:200]}")
            trace.flag("search_failed")
        items = [item for item in found if item.tier != SourceTier.low][: self.settings.evidence_k]
        step.notes.append("evidence ids: " + (", ".join(item.id for item in items) or "none"))
        if not items:
            trace.flag("no_evidence")
        step.latency_s = time.perf_counter() - started
        return items
