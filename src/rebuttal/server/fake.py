"""A fake pipeline for load tests: `rebuttal serve --fake-pipeline` (never for real posts).

It answers every post at once without a model: the same hateful analysis, a fixed reply (queued
for review like a real one) and one SPAR tuple, so a load test measures the service (auth, rate
limits, storage, the queue, the batch worker), not a model.
"""

from __future__ import annotations

import time

from rebuttal.types import (
    Analysis, FireResult, HateType, Reply, SparResult, SparTuple, Trace, TraceStep,
)

MODEL_NAME = "fake-pipeline"


class FakePipeline:
    """The four methods of `services.Services`; `delay_s` is slept per post (a model's latency)."""

    def __init__(self, delay_s: float = 0.0):
        self.delay_s = delay_s

    def _trace(self) -> Trace:
        if self.delay_s:
            time.sleep(self.delay_s)
        return Trace(steps=[TraceStep(stage="analyst", model=MODEL_NAME, prompt_version="none",
                                      latency_s=self.delay_s)])

    def _fire(self, text: str, id: str | None, reply: bool) -> FireResult:
        analysis = Analysis(is_hateful=True, target_group="Immigrants", category=HateType.dehumanization,
                            reasoning="fake pipeline: every post is treated as hateful")
        answer = Reply(text="A calm answer.", strategy=HateType.dehumanization.strategy) if reply else None
        return FireResult(id=id, text=text, status="ok", trace=self._trace(), analysis=analysis, reply=answer)

    def analyze(self, text: str, id: str | None = None) -> FireResult:
        return self._fire(text, id, reply=False)

    def respond(self, text: str, id: str | None = None) -> FireResult:
        return self._fire(text, id, reply=True)

    def parse(self, text: str, lang: str = "en", track: str | None = None, id: str | None = None) -> SparResult:
        return SparResult(id=id, text=text, lang=lang, track=track or "default", trace=self._trace(),
                          tuples=[SparTuple(target="immigrants", argument="fake", label=1)])

    def health(self) -> dict:
        return {"model": MODEL_NAME, "model_loaded": True, "memory_size": None, "fake_pipeline": True}
