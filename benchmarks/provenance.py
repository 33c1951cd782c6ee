"""The header every benchmarks/results file starts with: what produced it, on what.

    lines = header("Evidence store benchmark", split="silver FactualCS train (choices) ...",
                   model="none (no chat model)", memory="all-MiniLM-L6-v2 encoder")
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
import time


def command() -> str:
    """The exact command line that is running, as it can be pasted again from the repository root."""
    script = os.path.relpath(sys.argv[0])
    return "PYTHONPATH=src .venv/bin/python " + " ".join(shlex.quote(a) for a in [script, *sys.argv[1:]])


def header(title: str, *, split: str, model: str, memory: str) -> list[str]:
    """Markdown lines: title, command, data split, model, memory/encoder, machine and date."""
    return [
        f"# {title}", "",
        f"- command: `{command()}`",
        f"- data split: {split}",
        f"- chat model: {model}",
        f"- memory / encoder: {memory}",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores (shared with other jobs), "
        f"Python {platform.python_version()}; date {time.strftime('%Y-%m-%d')}",
        "- this file is written whole by the script; do not edit it by hand", "",
    ]
