"""`rebuttal eval spar --pred --gold --track ...` (a plain typer function; the CLI mounts it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rebuttal.eval.spar_scoring import format_report, read_predictions, score
from rebuttal.data.gold import GoldFormatError, load_gold
from rebuttal.data.vocab import Track


def split_ids(path: Path) -> set[str]:
    """Dev ids from a tagger folder (its config.json `split.dev_ids`) or a plain list of ids."""
    config = path / "config.json" if path.is_dir() else path
    if not config.exists():
        raise FileNotFoundError(f"split not found: {config}")
    if config.name == "config.json":
        return {str(i) for i in json.loads(config.read_text(encoding="utf-8"))["split"]["dev_ids"]}
    return {line.strip() for line in config.read_text(encoding="utf-8").splitlines() if line.strip()}


def eval_spar_command(
    pred: Annotated[Path, typer.Option("--pred", help="Predictions: JSONL from `rebuttal run --system spar`.")],
    gold: Annotated[Path, typer.Option("--gold", help="Gold file: STATE-ToxiCN JSON or TBO JSONL.")],
    track: Annotated[Track, typer.Option("--track", help="Benchmark track")] = Track.en_main,
    report: Annotated[Path | None, typer.Option("--report", help="Also write the full report as JSON here.")] = None,
    split: Annotated[Path | None, typer.Option("--split", help="Score only these gold ids: a trained tagger's "
                                                               "folder (its dev split) or a file of ids, one a line.")] = None,
) -> None:
    """Score SPAR-Hate predictions against a gold file (hard/soft F1 as in the paper)."""
    track = Track(track)  # typer already refused anything else
    try:
        gold_posts = load_gold(gold)
        predictions = read_predictions(pred)
        if split is not None:
            ids = split_ids(split)
            gold_posts = [p for p in gold_posts if p.id in ids]
    except (GoldFormatError, FileNotFoundError, json.JSONDecodeError, KeyError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if track.lang == "zh" and gold_posts and gold_posts[0].lang != "zh":
        typer.echo(f"error: track {track} needs a STATE-ToxiCN gold file", err=True)
        raise typer.Exit(2)
    if track.lang == "en" and gold_posts and gold_posts[0].lang != "en":
        typer.echo("error: track en-main needs a TBO gold file", err=True)
        raise typer.Exit(2)
    result = score(predictions, gold_posts, track.value)
    typer.echo(format_report(result))
    if report is not None:
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
        typer.echo(f"report written to {report}")
