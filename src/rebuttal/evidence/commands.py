"""`rebuttal evidence ...`: add corpora, list them, search local (or web) evidence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rebuttal.evidence.base import FallbackSearcher, SearchError, search_evidence
from rebuttal.evidence.corpus import CorpusError, add_corpus, list_corpora, remove_corpus
from rebuttal.optional import MissingBackend

app = typer.Typer(help="Evidence corpora and search (local by default, web on request).",
                  no_args_is_help=True)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


@app.command("add")
def add_command(
    file: Annotated[Path, typer.Argument(help="A JSONL corpus (id, text, source, url, date, tier, topic, keywords)")],
    from_memory: Annotated[bool, typer.Option("--from-memory", help="FILE is memory records in the FactualCS silver format; index their evidence")] = False,
    name: Annotated[str | None, typer.Option(help="Corpus name (default: the file name)")] = None,
    replace: Annotated[bool, typer.Option(help="Overwrite an installed corpus of the same name")] = False,
) -> None:
    """Validate FILE and add it to the evidence searched by every later run."""
    try:
        target, added, skipped = add_corpus(file, from_memory=from_memory, name=name, replace=replace)
    except CorpusError as exc:
        _fail(str(exc))
    note = f" ({skipped} rows without evidence skipped)" if skipped else ""
    typer.echo(f"added {added} passages as corpus {target.stem!r}{note}: {target}")


@app.command("remove")
def remove_command(name: Annotated[str, typer.Argument(help="A user corpus name (see `list`)")]) -> None:
    """Remove a corpus added with `add`."""
    try:
        target = remove_corpus(name)
    except CorpusError as exc:
        _fail(str(exc))
    typer.echo(f"removed {target}")


@app.command("list")
def list_command(as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False) -> None:
    """Corpora searched by default and their passage counts."""
    corpora = list_corpora()
    if as_json:
        typer.echo(json.dumps(corpora, indent=2))
        return
    if not corpora:
        typer.echo("no evidence corpora (add one with: rebuttal evidence add FILE.jsonl)")
        return
    for corpus in corpora:
        kind = "shipped" if corpus["shipped"] else "user"
        status = f"INVALID: {corpus['error']}" if corpus["error"] else f"{corpus['passages']} passages"
        typer.echo(f"{corpus['name']:<28} {kind:<8} {status:<16} {corpus['path']}")
    total = sum(c["passages"] for c in corpora)
    typer.echo(f"total: {total} passages in {len(corpora)} corpora")


@app.command("search")
def search_command(
    query: Annotated[str, typer.Argument(help="What to look for")],
    k: Annotated[int, typer.Option("--k", "-k", min=1, max=50, help="Number of results")] = 3,
    web: Annotated[bool, typer.Option("--web", help="Search DuckDuckGo first; fall back to local evidence")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Search the evidence the FIRE generator would see."""
    from rebuttal.evidence.store import LocalEvidenceStore
    from rebuttal.evidence.web import WebSearcher

    try:
        searcher = LocalEvidenceStore.default()
        if web:
            searcher = FallbackSearcher(WebSearcher(), searcher)
        outcome = search_evidence(searcher, query, k)
    except (CorpusError, SearchError, MissingBackend) as exc:
        _fail(str(exc))
    items, notes = outcome.items, outcome.notes
    if as_json:
        typer.echo(json.dumps({"query": query, "searcher": searcher.name, "notes": notes,
                               "degraded": outcome.degraded,
                               "items": [item.model_dump(mode="json") for item in items]},
                              indent=2, ensure_ascii=False))
        return
    for note in notes:
        typer.echo(f"note: {note}")
    if not items:
        typer.echo("no relevant evidence found")
    for item in items:
        meta = ", ".join(x for x in [item.source, item.date, item.tier.value] if x)
        score = f" score={item.score:.3f}" if item.score is not None else ""
        typer.echo(f"[{item.id}]{score} ({meta})\n  {item.text}")
        if item.url:
            typer.echo(f"  {item.url}")
