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
    value: T
    attempts: int
    usage: Usage
    latency_s: float
    completions: list[Completion] = field(default_factory=list)


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'object'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
    return str(exc)[:300]


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
    conversation = list(messages)
    completions: list[Completion] = []
    error = "no attempt made"
    for attempt in range(1, max_retries + 2):
        completion = model.generate(
            conversation, schema=schema, max_tokens=max_tokens, temperature=temperature, seed=seed
        )
        completions.append(completion)
        try:
            value = completion.parsed or parse_json_as(completion.text, schema)
        except ValueError as exc:  # includes ValidationError
            error = _short_error(exc)
            conversation = [
                *messages,
                {"role": "assistant", "content": completion.text[:2000]},
                {"role": "user", "content": REASK.format(error=error)},
            ]
            continue
        return StructuredResult(
            value=value,
            attempts=attempt,
            usage=_total_usage(completions),
            latency_s=sum(c.latency_s for c in completions),
            completions=completions,
        )
    raise StructuredOutputError(
        f"{model.name} returned invalid {schema.__name__} after {len(completions)} attempts: {error}",
        raw=completions[-1].text if completions else "",
        attempts=len(completions),
        usage=_total_usage(completions),
        latency_s=sum(c.latency_s for c in completions),
    )


def _total_usage(completions: list[Completion]) -> Usage:
    total = Usage()
    for completion in completions:
        total = total + completion.usage
    return total
