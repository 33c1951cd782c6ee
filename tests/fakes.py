"""Offline test doubles: a chat model scripted per turn and a fake OpenAI-compatible server."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rebuttal.llm.base import ChatModel
from rebuttal.types import Usage

Reply = str | dict | list | Callable[[list[dict], dict | None], Any]


def _as_text(reply: Any) -> str:
    return reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)


class ScriptedChatModel(ChatModel):
    """Answers each call with the next scripted reply (a string, a JSON-able object, or a
    function of (messages, json_schema)). Or pass `handler` to answer every call by function.
    Every call is recorded in `calls` for assertions."""

    def __init__(self, replies: list[Reply] | None = None, *, handler: Callable | None = None,
                 name: str = "scripted"):
        self.replies = list(replies or [])
        self.handler = handler
        self.name = name
        self.calls: list[dict] = []

    def _complete(self, messages, *, json_schema, max_tokens, temperature, seed, stop):
        self.calls.append({"messages": list(messages), "schema": json_schema})
        if self.handler is not None:
            reply = self.handler(list(messages), json_schema)
        elif self.replies:
            reply = self.replies.pop(0)
            if callable(reply):
                reply = reply(list(messages), json_schema)
        else:
            raise AssertionError(f"ScriptedChatModel ran out of replies at call {len(self.calls)}")
        text = _as_text(reply)
        prompt_chars = sum(len(m["content"]) for m in messages)
        return text, Usage(prompt_tokens=prompt_chars // 4, completion_tokens=len(text) // 4)


class FakeOpenAIServer:
    """A local /v1/chat/completions server. `script` is a list of (status, body, delay_s)
    tuples served in order (the last repeats); every request body is kept in `requests`."""

    def __init__(self, script: list[tuple[int, Any, float]]):
        self.script = list(script)
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                server.requests.append(json.loads(self.rfile.read(length) or b"{}"))
                status, body, delay = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                if delay:
                    threading.Event().wait(delay)
                payload = (body if isinstance(body, str) else json.dumps(body)).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def chat_body(content: str, prompt_tokens: int = 10, completion_tokens: int = 5) -> dict:
    return {
        "id": "fake", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
    }


class SameVectorEncoder:
    """Every text gets the same unit vector: every draft is on topic, every evidence item fits."""

    def encode(self, texts):
        import numpy as np

        return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)


class WordEncoder:
    """Hashed bag of words, L2-normalised: texts sharing words are similar, others are not."""

    def encode(self, texts):
        import re
        import zlib

        import numpy as np

        rows = np.zeros((len(texts), 512), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                rows[i, zlib.crc32(word.encode()) % 512] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms == 0, 1, norms)


class FixedGate:
    """A hate gate that gives every text the same probability."""

    kind = "fixed"

    def __init__(self, score: float, threshold: float = 0.5, sure: float = 1.01, fallback: bool = False):
        self.score, self.threshold, self.sure, self.fallback = score, threshold, sure, fallback

    def scores(self, texts, vectors=None, encoder=None):
        return [(self.score, self, "en") for _ in texts]

    def is_fallback(self, gate) -> bool:
        return self.fallback

    def warm_up(self) -> None:
        self.warmed = True


def run_in_threads(target: Callable[[], None], count: int) -> list[str]:
    """Start `count` threads on `target` at once and join them; the exceptions they raised."""
    errors: list[str] = []

    def guarded():
        try:
            target()
        except Exception as exc:  # noqa: BLE001 - returned for the test to assert on
            errors.append(repr(exc))

    threads = [threading.Thread(target=guarded) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def wait_until_ok(url: str, timeout: float, process=None) -> bool:
    """Poll `url` until it answers 200 (True), the deadline passes or `process` exits (False)."""
    import time

    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (process is None or process.poll() is None):
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    return False
