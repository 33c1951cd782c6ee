"""LLM calls for the SPAR stages: batched structured output (`rebuttal.llm.generate_objects`)
and per-stage trace records."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel

from rebuttal.llm import ChatModel, StructuredOutputError, generate_objects
from rebuttal.llm.base import Message
from rebuttal.types import TraceStep

T = TypeVar("T", bound=BaseModel)


@dataclass
class Stage:
    """Everything one pipeline stage did, turned into a single TraceStep at the end.

    `flags` are typed reasons a reviewer must look at (a fallback was used, a role gave nothing
    usable); the pipeline copies them into the result's trace flags. Notes are free text."""

    name: str
    model: str | None = None
    prompt_versions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    cost: TraceStep = field(default_factory=lambda: TraceStep(stage="", attempts=0))
    started: float = field(default_factory=time.perf_counter)

    @property
    def calls(self) -> int:
        """LLM calls made (every attempt, re-asks included)."""
        return self.cost.attempts

    def note(self, text: str) -> None:
        self.notes.append(text)

    def flag(self, reason: str) -> None:
        """A note that also becomes a trace flag of the result."""
        self.note(reason)
        if reason not in self.flags:
            self.flags.append(reason)

    def uses(self, version: str) -> None:
        if version not in self.prompt_versions:
            self.prompt_versions.append(version)

    def step(self) -> TraceStep:
        wall = time.perf_counter() - self.started
        return TraceStep(
            stage=self.name, model=self.model, prompt_version=",".join(self.prompt_versions) or None,
            latency_s=round(self.cost.latency_s if self.calls else wall, 4), usage=self.cost.usage,
            attempts=max(self.calls, 1), notes=[*self.notes, f"llm_calls={self.calls}"],
        )


def call_objects(model: ChatModel, conversations: Sequence[Sequence[Message]], schema: type[T], stage: Stage,
                 *, max_tokens: int, labels: Sequence[str]) -> list[tuple[T | None, str]]:
    """Independent calls in one batch (concurrent on HTTP backends), each invalid answer re-asked
    once with its validation error. One (value, raw text) per conversation; value None when the
    answer stayed invalid (the raw text is kept for lenient salvage)."""
    stage.model = model.name
    if not conversations:
        return []
    out: list[tuple[T | None, str]] = []
    for outcome, label in zip(generate_objects(model, conversations, schema, max_tokens=max_tokens), labels):
        stage.cost.record(outcome)
        if isinstance(outcome, StructuredOutputError):
            stage.note(f"{label}: invalid output after {outcome.attempts} attempts")
            out.append((None, outcome.raw))
            continue
        if outcome.attempts > 1:
            stage.note(f"{label}: valid after re-ask")
        out.append((outcome.value, outcome.raw))
    return out


def call_object(model: ChatModel, messages: Sequence[Message], schema: type[T], stage: Stage,
                *, max_tokens: int, label: str) -> tuple[T | None, str]:
    """One validated call (one re-ask): (value, raw text), value None on failure."""
    return call_objects(model, [messages], schema, stage, max_tokens=max_tokens, labels=[label])[0]
