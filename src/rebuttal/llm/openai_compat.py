"""OpenAI-compatible chat completions over HTTP: vLLM, llama.cpp server, Ollama, hosted APIs."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from rebuttal.llm.base import ChatModel, Completion, LLMError, Message
from rebuttal.types import Usage

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class OpenAICompatModel(ChatModel):
    """A model served behind `/v1/chat/completions`.

    JSON schemas go out as `response_format: {"type": "json_schema", ...}`, which vLLM, the
    llama.cpp server and OpenAI enforce. Timeouts and transient statuses (429, 5xx) are retried
    with exponential backoff and jitter, at most `max_retries` times.
    """

    def __init__(
        self,
        model: str,
        base_url: str = "http://localhost:8000/v1",
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        max_concurrency: int = 8,
        extra_body: dict[str, Any] | None = None,
    ):
        self.name = model
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_concurrency = max_concurrency
        self.extra_body = extra_body or {}
        key = api_key or os.environ.get("REBUTTAL_API_KEY") or os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers)

    def _payload(self, messages, json_schema, max_tokens, temperature, seed, stop) -> dict:
        payload: dict[str, Any] = {
            "model": self.name,
            "messages": list(messages),
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": seed,
            **self.extra_body,
        }
        if stop:
            payload["stop"] = stop
        if json_schema is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": json_schema.get("title", "response"), "schema": json_schema},
            }
        return payload

    def _complete(self, messages, *, json_schema, max_tokens, temperature, seed, stop):
        payload = self._payload(messages, json_schema, max_tokens, temperature, seed, stop)
        url = f"{self.base_url}/chat/completions"
        last_error = "no attempt"
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1) * (0.5 + random.random() / 2))
            try:
                response = self._client.post(url, json=payload)
            except httpx.TimeoutException:
                last_error = f"timed out after {self._client.timeout.read}s"
                continue
            except httpx.TransportError as exc:
                last_error = f"connection failed: {exc}"
                continue
            if response.status_code in RETRY_STATUS:
                last_error = f"HTTP {response.status_code}: {response.text[:200]}"
                continue
            if response.status_code >= 400:
                raise LLMError(f"{url} answered HTTP {response.status_code}: {response.text[:300]}")
            return self._read(response)
        raise LLMError(f"{url} failed after {self.max_retries + 1} attempts: {last_error}")

    @staticmethod
    def _read(response: httpx.Response) -> tuple[str, Usage]:
        try:
            body = response.json()
            text = body["choices"][0]["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"malformed chat completion response: {exc!r}") from exc
        usage = body.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        return text, Usage(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            cached_prompt_tokens=int(details.get("cached_tokens") or 0),
        )

    def generate_batch(
        self, conversations: Sequence[Sequence[Message]], **kwargs: Any
    ) -> list[Completion]:
        with ThreadPoolExecutor(max_workers=max(1, self.max_concurrency)) as pool:
            return list(pool.map(lambda messages: self.generate(messages, **kwargs), conversations))

    def close(self) -> None:
        self._client.close()
