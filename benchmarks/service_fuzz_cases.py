"""What service_fuzz.py and tests/test_server_fuzz.py share: the documented error shape, and
hostile variants of a generated request (the input classes of issue #50), which schemathesis
does not produce itself: lone surrogates, NUL, invisible and bidi characters, bodies that are not
UTF-8, nested too deeply or hold huge numbers, ids past the database's integers."""

from __future__ import annotations

import json
import random
from typing import Any

SERVER_ERROR = 500
# Strings put into generated bodies: each must be answered 2xx/4xx, never 5xx.
HOSTILE_STRINGS = (
    "Women are \ud800 dumb", "\udfff", "a\x00b", "\x00", "they are \u202evermin\u202c", "\u2066\u2069",
    "s\u200bl\u2060u\u00adr\ufeff", "\ufffd", "x" * 6000, "\U0001F469\u200d\U0001F467", "   ", "",
)
BIG_INTS = (2**63, 2**63 - 1, 2**64, 10**40, -(2**63) - 1, 0, -1)
RAW_BODIES = (
    '{"text": "café"}'.encode("latin-1"),
    b'{"text": "\xff\xfe\xfd"}',
    b'{"text": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    b'{"items": [' + b"{" * 3000 + b"}" * 3000 + b"]}",
    b'{"text": ' + b"9" * 5000 + b"}",
    b'{"text": "x"',
    b"\xef\xbb\xbf{\"text\": \"bom first\"}",
    '{"text": "utf-16"}'.encode("utf-16"),
    b'{"text": "x", "\\ud800": 1}',
    b"",
)


def response_problem(status: int, content_type: str, body: bytes) -> str | None:
    """Why a response breaks the contract (a 5xx, or an error not shaped {"error", "detail"}), else None."""
    if status >= SERVER_ERROR:
        return f"server error {status}"
    if status < 400:
        return None
    if "application/json" not in content_type:
        return f"{status} is not JSON ({content_type or 'no content type'})"
    try:
        payload = json.loads(body)
    except ValueError:
        return f"{status} body is not valid JSON"
    if not (isinstance(payload, dict) and isinstance(payload.get("error"), str)
            and isinstance(payload.get("detail"), str)):
        return f"{status} body lacks string `error` and `detail`"
    return None


def _strings(node: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every string (and integer) leaf of a JSON document."""
    if isinstance(node, dict):
        return [p for key, value in node.items() for p in _strings(value, (*path, key))]
    if isinstance(node, list):
        return [p for index, value in enumerate(node) for p in _strings(value, (*path, index))]
    return [path] if isinstance(node, str | int) and not isinstance(node, bool) else []


def _replace(node: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[path[0]] = _replace(node[path[0]], path[1:], value)
    return copy


def hostile_body(body: Any, rng: random.Random) -> bytes:
    """A generated JSON body with one leaf made hostile, or one of the raw unreadable bodies.
    JSON is written ASCII-escaped, so a lone surrogate travels as "\\ud800", as clients send it."""
    leaves = _strings(body) if isinstance(body, dict | list) else []
    if not leaves or rng.random() < 0.25:
        return rng.choice(RAW_BODIES)
    path = rng.choice(leaves)
    value = rng.choice(BIG_INTS) if rng.random() < 0.2 else rng.choice(HOSTILE_STRINGS)
    if rng.random() < 0.3 and isinstance(body, dict):  # also a hostile key
        body = {**body, rng.choice(HOSTILE_STRINGS[:4]): 1}
    return json.dumps(_replace(body, path, value)).encode()


def hostile_path(url: str, rng: random.Random) -> str:
    """The URL with one path segment after /v1/<collection>/ replaced by a hostile id (a huge
    integer, an escaped NUL or lone surrogate, invalid UTF-8), or with a huge offset."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    segments = parts.path.split("/")  # "", "v1", "review", "{id}", ...
    if len(segments) < 4:
        query = f"offset={rng.choice(BIG_INTS)}"
        return urlunsplit(parts._replace(query=f"{parts.query}&{query}" if parts.query else query))
    segments[3] = rng.choice([str(rng.choice(BIG_INTS)), "%00", "%ED%A0%80", "%FF%FE", "a%00b", "9" * 30])
    return urlunsplit(parts._replace(path="/".join(segments)))
