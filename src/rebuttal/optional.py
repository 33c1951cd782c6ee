"""Optional dependencies: import one or fail with the install command.

Heavy libraries (torch, llama_cpp, fastapi, sqlalchemy, bm25s, usearch, matplotlib, ddgs...)
are imported inside functions through `require`, so `import rebuttal` stays light. This module
imports nothing from rebuttal, so every layer may use it.
"""

from __future__ import annotations

import importlib
from typing import Any


class MissingBackend(ImportError):
    """An optional dependency (a backend or an extra) is not installed."""


def require(module: str, extra: str) -> Any:
    """Import an optional dependency or fail with the install command."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingBackend(
            f"`{module}` is not installed; install it with: pip install 'rebuttal[{extra}]'"
        ) from exc
