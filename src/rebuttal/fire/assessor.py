"""The learned half of FIRE's analyst: hate gate, category model and memory, from one MiniLM
vector per post. Everything here is trained on data (rebuttal.learned) and takes milliseconds;
the LLM only explains what these decided (analyst.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from rebuttal.fire.injection import instruction_free
from rebuttal.types import CategoryVote, GateVerdict, HateType, MemoryView, Trace, TraceStep


@dataclass
class Assessment:
    vector: np.ndarray | None  # the post's MiniLM vector (also used by the draft checks)
    gate: GateVerdict | None  # None when no gate is configured
    votes: list[CategoryVote]
    category: HateType | None  # the combined category; None without any learned component
    confidence: float | None
    uncertain: bool  # the category model's confidence is below its ambiguity cut
    category_fallback: bool  # the category model's states part could not run (no embedded model)
    view: MemoryView | None
    query: object | None  # the MemoryQuery, for its exemplars

    @property
    def hateful(self) -> bool | None:
        return None if self.gate is None else self.gate.hateful


def _vote(source: str, probabilities: dict[HateType, float]) -> CategoryVote:
    best = max(probabilities, key=probabilities.get)
    return CategoryVote(source=source, category=best, probabilities={t: round(p, 4) for t, p in probabilities.items()})


def _memory_probabilities(scores: dict[HateType, float]) -> dict[HateType, float]:
    """The memory's S_t as a distribution (softmax at the cosine scale) for the trace."""
    values = np.array([scores.get(t, -1.0) for t in HateType]) / 0.05
    values = np.exp(values - values.max())
    return dict(zip(HateType, (values / values.sum()).tolist()))


class Assessor:
    def __init__(self, encoder=None, memory=None, category_model=None, gate=None, category_memory=None):
        self.encoder = encoder
        self.memory = memory
        self.category_model = category_model
        self.gate = gate
        # The memory whose S_t the category model was trained on (the shipped bank); a user's own
        # memory still supplies exemplars and its vote, but its scores are on another scale.
        self.category_memory = category_memory if category_memory is not None else memory

    def assess(self, post: str, trace: Trace) -> Assessment:
        started = time.perf_counter()
        # What the post says about its target, without the parts that give the model orders (issue
        # 50): appended orders moved the gate and the category; the gate takes the higher score.
        content = instruction_free(post)
        full, post = post, content or post
        vector = self.encoder.encode([post]) if self.encoder is not None else None
        query = view = None
        votes: list[CategoryVote] = []
        if self.memory is not None:
            query = self.memory.query(post)  # the memory has its own encoder (MiniLM + SupCon head)
            view = query.view()
            votes.append(_vote("memory", _memory_probabilities(query.scores)))
        category = confidence = None
        uncertain = fallback = False
        notes_extra = []
        if self.category_model is not None and vector is not None:
            model = self.category_model
            scores = None
            if model.uses_memory:
                own = query if self.category_memory is self.memory else None
                scores = [(own or self.category_memory.query(post)).scores]
            states, fallback = self._category_states(post)
            category, confidence, probabilities = model.predict([post], vector, scores, states)[0]
            votes.append(_vote("classifier", probabilities))
            cut = model.ambiguous_cut(states is not None)
            uncertain = confidence < cut
            if fallback:
                notes_extra.append("category from the text part alone: the embedded model's states could not be read")
            if uncertain:
                notes_extra.append(f"uncertain category: confidence below {cut:.2f}")
        elif view is not None:
            category, confidence = view.predicted, view.purity
        gate = self._gate(post, vector, full if content else None)
        notes = [f"{v.source}: {v.category.value}" for v in votes]
        if content:
            notes.append(f"scored without the post's orders to the model: {content[:120]}")
        if category is not None:
            notes.append(f"category {category.value} (confidence {confidence:.2f})")
        notes.extend(notes_extra)
        if gate is not None:
            notes.append(f"gate {gate.score:.2f} vs threshold {gate.threshold:.2f}: "
                         + ("hateful" if gate.hateful else "not hateful"))
        trace.add(TraceStep(stage="assessor", latency_s=time.perf_counter() - started, attempts=0, notes=notes))
        return Assessment(vector[0] if vector is not None else None, gate, votes, category, confidence, uncertain,
                          fallback, view, query)

    def _category_states(self, post: str) -> tuple[np.ndarray | None, bool]:
        """(the post's pooled states for the category model or None, whether that is a fallback)."""
        from rebuttal.learned.gate import MODEL_MISSING

        part = self.category_model.states
        if part is None:
            return None, False
        try:
            return part.features([post]), False
        except MODEL_MISSING:
            return None, True

    def _gate(self, post: str, vector: np.ndarray | None, full: str | None = None) -> GateVerdict | None:
        """The gate's verdict on `post`; with `full` (the post before its orders to the model were
        left out) the higher of the two scores."""
        if self.gate is None:
            return None
        texts, vectors = [post], vector
        if full is not None:
            texts.append(full)
            vectors = None if vector is None else np.vstack([vector, self.encoder.encode([full])])
        score, gate, lang = max(self.gate.scores(texts, vectors, self.encoder), key=lambda scored: scored[0])
        fallback = self.gate.is_fallback(gate)
        reason = f"{lang} {gate.kind} gate" + (" (fallback: the language's own gate could not run)" if fallback else "")
        return GateVerdict(hateful=score >= gate.threshold, score=round(score, 4), threshold=round(gate.threshold, 4),
                           sure=gate.sure, reason=reason, fallback=fallback)
