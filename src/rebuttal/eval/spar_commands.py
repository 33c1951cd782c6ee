"""`rebuttal eval spar --pred --gold --track ...` (a plain typer function; the CLI mounts it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rebuttal.data.spar_datasets import GoldFormatError, load_gold
from rebuttal.eval.spar_scoring import format_report, read_predictions, score


def eval_spar_command(
    pred: Annotated[Path, typer.Option("--pred", help="Predictions: JSONL from `rebuttal run --system spar`.")],
    gold: Annotated[Path, typer.Option("--gold", help="Gold file: STATE-ToxiCN JSON or TBO JSONL.")],
    track: Annotated[str, typer.Option("--track", help="en-main | zh-main | zh-quad")] = "en-main",
    report: Annotated[Path | None, typer.Option("--report", help="Also write the full report as JSON here.")] = None,
) -> None:
    """Score SPAR-Hate predictions against a gold file (hard/soft F1 as in the paper)."""
    if track not in ("en-main", "zh-main", "zh-quad"):
        raise typer.BadParameter(f"unknown track {track!r}; choose en-main, zh-main or zh-quad")
    try:
        gold_posts = load_gold(gold)
        predictions = read_predictions(pred)
    except (GoldFormatError, FileNotFoundError, json.JSONDecodeError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if track.startswith("zh") and gold_posts and gold_posts[0].lang != "zh":
        typer.echo(f"error: track {track} needs a STATE-ToxiCN gold file", err=True)
        raise typer.Exit(2)
    if track == "en-main" and gold_posts and gold_posts[0].lang != "en":
        typer.echo("error: track en-main needs a TBO gold file", err=True)
        raise typer.Exit(2)
    result = score(predictions, gold_posts, track)
    typer.echo(format_report(result))
    if report is not None:
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
        typer.echo(f"report written to {report}")
