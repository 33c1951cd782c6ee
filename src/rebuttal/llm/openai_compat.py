"""OpenAI-compatible chat completions over HTTP: vLLM, llama.cpp server, Ollama, hosted APIs."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from rebuttal import config
from rebuttal.llm.base import ChatModel, Completion, LLMError, Message
from rebuttal.types import Usage

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class ServerRefused(LLMError):
    """The server answered, with an error status (as opposed to timing out or being down)."""


class OpenAICompatModel(ChatModel):
    """A model served behind `/v1/chat/completions`.

    JSON schemas go out as `response_format: {"type": "json_schema", ...}`, which vLLM, the C++
    llama-server and OpenAI enforce; a server that rejects that form (llama-cpp-python's own
    server answers 500) is asked once more with `{"type": "json_object", "schema": ...}`, and that
    form is kept for the model's later calls. Timeouts and transient statuses (429, 5xx) are retried
    with exponential backoff and jitter, at most `max_retries` times.
    """

    concurrent_calls = True  # the server queues requests itself

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
        self.schema_form = "json_schema"  # or "json_object" once the server refused json_schema
        key = api_key or config.env(config.API_KEY) or config.env("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers)

    def _payload(self, messages, json_schema, max_tokens, temperature, seed, stop, form: str) -> dict:
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
        if json_schema is not None and form == "json_object":
            payload["response_format"] = {"type": "json_object", "schema": json_schema}
        elif json_schema is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": json_schema.get("title", "response"), "schema": json_schema},
            }
        return payload

    def _complete(self, messages, *, json_schema, max_tokens, temperature, seed, stop):
        args = (messages, json_schema, max_tokens, temperature, seed, stop)
        form = self.schema_form  # read once: other threads may switch it while this call runs
        try:
            return self._post(self._payload(*args, form))
        except ServerRefused:
            if json_schema is None or form == "json_object":
                raise
            result = self._post(self._payload(*args, "json_object"))
            self.schema_form = "json_object"  # only once the other form worked
            return result

    def _post(self, payload: dict) -> tuple[str, Usage]:
        url = f"{self.base_url}/chat/completions"
        last_error, refused = "no attempt", False
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1) * (0.5 + random.random() / 2))
            try:
                response = self._client.post(url, json=payload)
            except httpx.TimeoutException:
                last_error, refused = f"timed out after {self._client.timeout.read}s", False
                continue
            except httpx.TransportError as exc:
                last_error, refused = f"connection failed: {exc}", False
                continue
            # A 500 about response_format is the server refusing the schema form, not a hiccup.
            if response.status_code in RETRY_STATUS and "response_format" not in response.text:
                last_error, refused = f"HTTP {response.status_code}: {response.text[:200]}", True
                continue
            if response.status_code >= 400:
                raise ServerRefused(f"{url} answered HTTP {response.status_code}: {response.text[:300]}")
            return self._read(response)
        error = ServerRefused if refused else LLMError
        raise error(f"{url} failed after {self.max_retries + 1} attempts: {last_error}")

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
