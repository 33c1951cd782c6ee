"""Validated structured calls: parse, re-ask once with the error, then a typed failure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from rebuttal.llm.base import ChatModel, Completion, Message, StructuredOutputError, parse_json_as
from rebuttal.types import Usage

T = TypeVar("T", bound=BaseModel)

REASK = (
    "Your previous answer was not valid: {error}\n"
    "Answer again with only one JSON object that follows the schema."
)


@dataclass
class StructuredResult(Generic[T]):
    """A validated answer and what it cost. `StructuredOutputError` carries the same
    `attempts`, `usage`, `latency_s` and `raw`, so `TraceStep.record` takes either."""

    value: T
    attempts: int
    usage: Usage
    latency_s: float
    completions: list[Completion] = field(default_factory=list)

    @property
    def raw(self) -> str:
        return self.completions[-1].text if self.completions else ""


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'object'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
    return str(exc)[:300]


@dataclass
class _Pending:
    """One conversation of a batch while it is being (re-)asked."""

    messages: Sequence[Message]
    conversation: list[Message]
    completions: list[Completion] = field(default_factory=list)
    error: str = "no attempt made"

    def outcome(self, value, model_name: str, schema_name: str):
        usage = Usage()
        for completion in self.completions:
            usage = usage + completion.usage
        latency = sum(c.latency_s for c in self.completions)
        if value is not None:
            return StructuredResult(value=value, attempts=len(self.completions), usage=usage,
                                    latency_s=latency, completions=self.completions)
        return StructuredOutputError(
            f"{model_name} returned invalid {schema_name} after {len(self.completions)} attempts: {self.error}",
            raw=self.completions[-1].text if self.completions else "",
            attempts=len(self.completions), usage=usage, latency_s=latency,
        )


def generate_objects(
    model: ChatModel,
    conversations: Sequence[Sequence[Message]],
    schema: type[T],
    *,
    max_retries: int = 1,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int = 0,
) -> list[StructuredResult[T] | StructuredOutputError]:
    """The batch form of `generate_object`: every conversation is asked in one `generate_batch`
    (concurrent on HTTP backends); each invalid answer is re-asked with its validation error
    appended (at most `max_retries` rounds, batched again). One outcome per conversation, in
    order: a StructuredResult, or the StructuredOutputError (returned, not raised)."""
    items = [_Pending(messages, list(messages)) for messages in conversations]
    values: list[T | None] = [None] * len(items)
    waiting = list(range(len(items)))
    for _round in range(max_retries + 1):
        if not waiting:
            break
        completions = model.generate_batch(
            [items[i].conversation for i in waiting], schema=schema, max_tokens=max_tokens,
            temperature=temperature, seed=seed,
        )
        still = []
        for i, completion in zip(waiting, completions):
            item = items[i]
            item.completions.append(completion)
            try:
                values[i] = completion.parsed or parse_json_as(completion.text, schema)
            except ValueError as exc:  # includes ValidationError
                item.error = _short_error(exc)
                item.conversation = [
                    *item.messages,
                    {"role": "assistant", "content": completion.text[:2000]},
                    {"role": "user", "content": REASK.format(error=item.error)},
                ]
                still.append(i)
        waiting = still
    return [item.outcome(value, model.name, schema.__name__) for item, value in zip(items, values)]


def generate_object(
    model: ChatModel,
    messages: Sequence[Message],
    schema: type[T],
    *,
    max_retries: int = 1,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int = 0,
) -> StructuredResult[T]:
    """Ask for a `schema` object; on invalid output re-ask (at most `max_retries` times)
    with the validation error appended, then raise StructuredOutputError."""
    [outcome] = generate_objects(model, [messages], schema, max_retries=max_retries,
                                 max_tokens=max_tokens, temperature=temperature, seed=seed)
    if isinstance(outcome, StructuredOutputError):
        raise outcome
    return outcome
