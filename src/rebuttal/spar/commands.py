"""`rebuttal parse TEXT --lang en|zh [--track ...]` (a plain typer function; the CLI mounts it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rebuttal.llm import LLMError, MissingBackend
from rebuttal.llm.registry import ModelRegistryError
from rebuttal.spar.lexicon import LexiconError
from rebuttal.spar.pipeline import default_parser
from rebuttal.types import SparResult


def render(result: SparResult) -> str:
    lines = [f"{result.system} · {result.lang} · {result.track} · status {result.status} · "
             f"{result.llm_calls} LLM calls · {result.trace.total_latency_s:.1f}s"]
    if result.message:
        lines.append(f"note: {result.message}")
    for number, t in enumerate(result.tuples, 1):
        group = f" | group={t.group}" if t.group else ""
        lines.append(f"{number}. target={t.target!r} | argument={t.argument!r} | "
                     f"{'hateful' if t.label else 'not hateful'}{group}")
    for step in result.trace.steps:
        lines.append(f"  [{step.stage}] {step.prompt_version or '-'}: " + "; ".join(step.notes))
    for flag in result.trace.flags:
        lines.append(f"  flag: {flag}")
    return "\n".join(lines)


def parse_command(
    text: Annotated[str, typer.Argument(help="The post to parse (quote it).")],
    lang: Annotated[str, typer.Option("--lang", help="en | zh")] = "en",
    track: Annotated[str | None, typer.Option("--track", help="en-main | zh-main | zh-quad")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the SparResult as JSON.")] = False,
    backend: Annotated[str | None, typer.Option("--backend", help="llama | openai | transformers")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Registry name, GGUF path or served model.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible server URL.")] = None,
    lexicon: Annotated[Path | None, typer.Option("--lexicon", help="STATE-ToxiCN-format lexicon JSON (zh hints).")] = None,
) -> None:
    """Parse one post into (target, argument, hateful[, group]) tuples with SPAR-Hate."""
    try:
        parser = default_parser(backend=backend, model=model, base_url=base_url, lexicon_path=lexicon)
        result = parser.parse(text, lang=lang, track=track)
    except (LexiconError, MissingBackend, ModelRegistryError, LLMError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(result.model_dump_json(indent=2) if json_output else render(result))
    if result.status == "error":
        raise typer.Exit(1)
