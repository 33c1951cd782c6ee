"""LLM calls for the SPAR stages: structured output, batching, and per-stage trace records."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel

from rebuttal.llm import ChatModel, StructuredOutputError, generate_object
from rebuttal.llm.base import Message, parse_json_as
from rebuttal.llm.structured import REASK, _short_error
from rebuttal.types import TraceStep, Usage

T = TypeVar("T", bound=BaseModel)


@dataclass
class Stage:
    """Everything one pipeline stage did, turned into a single TraceStep at the end."""

    name: str
    model: str | None = None
    prompt_versions: list[str] = field(default_factory=list)
    calls: int = 0
    latency_s: float = 0.0
    usage: Usage = field(default_factory=Usage)
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def uses(self, version: str) -> None:
        if version not in self.prompt_versions:
            self.prompt_versions.append(version)

    def count(self, latency_s: float, usage: Usage, calls: int = 1) -> None:
        self.calls += calls
        self.latency_s += latency_s
        self.usage = self.usage + usage

    def step(self) -> TraceStep:
        wall = time.perf_counter() - self.started
        return TraceStep(
            stage=self.name, model=self.model, prompt_version=",".join(self.prompt_versions) or None,
            latency_s=round(self.latency_s if self.calls else wall, 4), usage=self.usage,
            attempts=max(self.calls, 1), notes=[*self.notes, f"llm_calls={self.calls}"],
        )


def call_object(model: ChatModel, messages: Sequence[Message], schema: type[T], stage: Stage,
                *, max_tokens: int, label: str, retries: int = 1) -> tuple[T | None, str]:
    """One validated call (with `retries` re-asks). On failure: (None, raw text) and a note."""
    stage.model = model.name
    try:
        result = generate_object(model, messages, schema, max_tokens=max_tokens, max_retries=retries)
    except StructuredOutputError as exc:
        stage.count(exc.latency_s, exc.usage, exc.attempts)
        stage.note(f"{label}: invalid output after {exc.attempts} attempts")
        return None, exc.raw
    stage.count(result.latency_s, result.usage, result.attempts)
    if result.attempts > 1:
        stage.note(f"{label}: valid after re-ask")
    return result.value, result.completions[-1].text


def call_objects(model: ChatModel, conversations: list[list[Message]], schema: type[T], stage: Stage,
                 *, max_tokens: int, labels: list[str]) -> list[tuple[T | None, str]]:
    """Independent calls in one `generate_batch` (concurrent on HTTP backends); every invalid
    answer gets one re-ask with its validation error, then (None, raw)."""
    stage.model = model.name
    if not conversations:
        return []
    completions = model.generate_batch(conversations, schema=schema, max_tokens=max_tokens)
    out: list[tuple[T | None, str]] = []
    for messages, completion, label in zip(conversations, completions, labels):
        stage.count(completion.latency_s, completion.usage)
        try:
            value = completion.parsed or parse_json_as(completion.text, schema)
            out.append((value, completion.text))
            continue
        except ValueError as exc:
            error = _short_error(exc)
        reask = [*messages, {"role": "assistant", "content": completion.text[:2000]},
                 {"role": "user", "content": REASK.format(error=error)}]
        value, raw = call_object(model, reask, schema, stage, max_tokens=max_tokens, label=label, retries=0)
        if value is not None:
            stage.note(f"{label}: valid after re-ask")
        out.append((value, raw or completion.text))
    return out
