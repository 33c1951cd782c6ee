"""The one chat interface every agent calls, and the errors it raises."""

from __future__ import annotations

import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rebuttal.optional import MissingBackend, require  # noqa: F401 - re-exported
from rebuttal.types import Usage

THINKING = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)  # Qwen3-style reasoning blocks

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": "..."}


class LLMError(RuntimeError):
    """The backend could not answer (unreachable, timed out, crashed)."""


class StructuredOutputError(LLMError):
    """The model's output stayed invalid after the re-ask."""

    def __init__(self, message: str, raw: str, attempts: int, usage: Usage | None = None,
                 latency_s: float = 0.0):
        super().__init__(message)
        self.raw = raw
        self.attempts = attempts
        self.usage = usage or Usage()
        self.latency_s = latency_s


class Completion(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str
    parsed: Any = None  # the validated pydantic object when a schema was given
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    model: str = ""


class ChatModel(ABC):
    """Base of all backends: subclasses implement `_complete` only."""

    name: str = "chat-model"
    # True when the backend itself handles concurrent calls (an HTTP server queues them); callers
    # that share one model between threads serialise calls to backends where this is False.
    concurrent_calls: bool = False

    @abstractmethod
    def _complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: dict | None,
        max_tokens: int,
        temperature: float,
        seed: int,
        stop: list[str] | None,
    ) -> tuple[str, Usage]:
        """Return the raw text and token usage of one chat completion."""

    def generate(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int = 0,
        stop: list[str] | None = None,
    ) -> Completion:
        """One completion; with `schema`, decoding is constrained where the backend can and
        `parsed` holds the validated object (or None if the text does not validate)."""
        started = time.perf_counter()
        text, usage = self._complete(
            list(messages),
            json_schema=schema.model_json_schema() if schema else None,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            stop=stop,
        )
        completion = Completion(
            text=THINKING.sub("", text).strip(), usage=usage, latency_s=time.perf_counter() - started, model=self.name
        )
        if schema is not None:
            try:
                completion.parsed = parse_json_as(completion.text, schema)
            except ValueError:
                completion.parsed = None
        return completion

    def generate_batch(
        self, conversations: Sequence[Sequence[Message]], **kwargs: Any
    ) -> list[Completion]:
        """Many independent completions; HTTP backends override this to run concurrently."""
        return [self.generate(messages, **kwargs) for messages in conversations]

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model's resources."""


def extract_json(text: str) -> Any:
    """The first JSON object or array in `text` (models wrap JSON in prose or fences)."""
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char in "{[":
            try:
                value, _ = decoder.raw_decode(text, start)
                return value
            except json.JSONDecodeError:
                continue
    raise ValueError("no JSON object found in the model output")


def parse_json_as(text: str, schema: type[BaseModel]) -> BaseModel:
    """Parse and validate; raises ValueError (pydantic's ValidationError is one) on failure."""
    return schema.model_validate(extract_json(text))
