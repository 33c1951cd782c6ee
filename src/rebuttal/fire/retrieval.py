"""FIRE's evidence step: retrieved passages for a factual claim, kept only when they are about
the post."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from rebuttal.types import EvidenceItem, SourceTier, Trace, TraceStep


@dataclass
class EvidenceRetriever:
    searcher: object | None
    encoder: object | None
    k: int
    min_similarity: float

    def retrieve(self, query: str, trace: Trace, post_vector: np.ndarray | None = None) -> list[EvidenceItem]:
        """Evidence for a factual claim, kept only when it is about the post. A failed search
        degrades (no evidence, flagged) and never stops the reply: the generator then cites nothing."""
        if self.searcher is None:
            return []
        from rebuttal.evidence import search_evidence

        step = trace.add(TraceStep(stage="evidence", notes=[f"query: {query}"], attempts=0))
        started = time.perf_counter()
        try:
            outcome = search_evidence(self.searcher, query, self.k)
            found = outcome.items
            step.notes += outcome.notes
            if outcome.degraded:
                trace.flag("search_degraded")
        except Exception as exc:  # noqa: BLE001 - SearchError or anything a custom searcher raises
            found = []
            step.notes.append(f"search failed: {type(exc).__name__}: {str(exc)[:200]}")
            trace.flag("search_failed")
        items = [item for item in found if item.tier != SourceTier.low][: self.k]
        items = self._fitting(items, post_vector, step)
        # No fitting evidence is not a defect: the draft checks then refuse any number or source.
        step.notes.append("evidence ids: " + (", ".join(item.id for item in items) or
                                              "none fits the post; the reply may state no numbers or sources"))
        step.latency_s = time.perf_counter() - started
        return items

    def _fitting(self, items: list[EvidenceItem], post_vector: np.ndarray | None, step: TraceStep) -> list[EvidenceItem]:
        if not items or post_vector is None or self.encoder is None:
            return items
        similarity = self.encoder.encode([item.text for item in items]) @ post_vector
        kept = [item for item, s in zip(items, similarity) if s >= self.min_similarity]
        dropped = [f"{item.id} ({s:.2f})" for item, s in zip(items, similarity) if s < self.min_similarity]
        if dropped:
            step.notes.append("not about the post, dropped: " + ", ".join(dropped))
        return kept
