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
from importlib import metadata
from pathlib import Path


def command() -> str:
    """The exact command line that is running, as it can be pasted again from the repository root."""
    script = os.path.relpath(sys.argv[0])
    return "PYTHONPATH=src .venv/bin/python " + " ".join(shlex.quote(a) for a in [script, *sys.argv[1:]])


def machine() -> str:
    """The CPU and the llama.cpp build: llama.cpp compiles for the CPU it is built on, and its greedy
    output can change from one build to another."""
    cpuinfo = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
             if line.startswith("model name")] if cpuinfo.exists() else []
    try:
        llama = f"llama-cpp-python {metadata.version('llama-cpp-python')}"
    except metadata.PackageNotFoundError:
        llama = "no llama-cpp-python"
    return (f"{platform.machine()} ({names[0] if names else platform.processor() or 'unknown CPU'}), {os.cpu_count()} "
            f"CPU cores (shared with other jobs), Python {platform.python_version()}, {llama}")


def header(title: str, *, split: str, model: str, memory: str) -> list[str]:
    """Markdown lines: title, command, data split, model, memory/encoder, machine and date."""
    return [
        f"# {title}", "",
        f"- command: `{command()}`",
        f"- data split: {split}",
        f"- chat model: {model}",
        f"- memory / encoder: {memory}",
        f"- machine: {machine()}; date {time.strftime('%Y-%m-%d')}",
        "- this file is written whole by the script; do not edit it by hand", "",
    ]
