"""`rebuttal memory ...`: train the encoder, build and query a memory, evaluate t̂.

`--data default` means the exemplar bank shipped in the package; `--index` left out means the
shipped default memory (bank + shipped head).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="FIRE memory: SupCon encoder, exemplar index, category scores and purity.",
                  no_args_is_help=True)

DataOption = Annotated[list[str], typer.Option(
    "--data", help="record file(s) (JSON, JSONL, CSV, Parquet); 'default' = the shipped bank")]


def _fail(message: str, code: int = 2) -> None:
    typer.secho(f"error: {message}", fg="red", err=True)
    raise typer.Exit(code)


def _records(paths: list[str]):
    from rebuttal.memory.records import DatasetError, load_many

    try:
        return load_many(paths)
    except DatasetError as exc:
        _fail(str(exc))


def _memory(index: str | None, k: int | None = None):
    from rebuttal.memory.store import Memory

    try:
        memory = Memory.load(index) if index else Memory.default()
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    if k:
        memory.k = k
    return memory


@app.command("train")
def train_command(
    data: DataOption,
    out: Annotated[Path, typer.Option("--out", help="folder for the trained encoder")],
    mode: Annotated[str, typer.Option("--mode", help="full (fine-tune MiniLM) or head")] = "head",
    dev: Annotated[list[str] | None, typer.Option("--dev", help="dev record file(s) for the model card")] = None,
    epochs: Annotated[int | None, typer.Option(help="default: 10 (head), 1 (full)")] = None,
    batch_size: Annotated[int, typer.Option()] = 64,
    lr: Annotated[float | None, typer.Option(help="default: 1e-3 (head), 2e-5 (full)")] = None,
    tau: Annotated[float, typer.Option(help="SupCon temperature")] = 0.1,
    seed: Annotated[int, typer.Option()] = 13,
) -> None:
    """Train the memory encoder with supervised contrastive loss; writes a model card."""
    from rebuttal.memory.train import TrainConfig, train

    if mode not in ("full", "head"):
        _fail(f"--mode must be full or head, not {mode!r}")
    records = _records(data)
    dev_records = _records(dev) if dev else None
    config = TrainConfig(mode=mode, epochs=epochs, batch_size=batch_size, lr=lr, tau=tau, seed=seed)
    report = train(records, out, config, dev=dev_records, data_names=list(data))
    typer.echo(f"trained {mode} encoder on {len(records)} records in {report.steps} steps -> {out}")
    if report.dev_accuracy:
        typer.echo(f"dev t̂ accuracy: {100 * report.dev_accuracy[0]:.1f}% before, "
                   f"{100 * report.dev_accuracy[-1]:.1f}% after")
    typer.echo(f"model card: {Path(out) / 'model_card.md'}")


@app.command("build")
def build_command(
    data: DataOption,
    out: Annotated[Path, typer.Option("--out", help="folder for the memory index")],
    encoder: Annotated[str, typer.Option(
        "--encoder", help="trained encoder folder, 'default' (shipped head) or 'base' (plain MiniLM)")] = "default",
    k: Annotated[int, typer.Option(help="exemplars per category")] = 5,
    threshold: Annotated[float, typer.Option(help="purity threshold")] = 0.62,
) -> None:
    """Embed records and save a memory index that `query` and `eval` can load."""
    from rebuttal.memory.encoders import load_encoder
    from rebuttal.memory.store import Memory

    records = _records(data)
    try:
        enc = load_encoder(encoder)
        memory = Memory.build(records, enc, k=k, threshold=threshold)
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    memory.save(out)
    counts = {t.value: len(p) for t, p in memory.positions.items()}
    typer.echo(f"memory of {len(records)} records ({counts}) with {enc.name} -> {out}")


@app.command("query")
def query_command(
    text: Annotated[str, typer.Argument(help="the post")],
    index: Annotated[str | None, typer.Option("--index", help="saved memory; default: shipped")] = None,
    k: Annotated[int | None, typer.Option(help="override k")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Category scores S_t, t̂, purity ρ and the exemplars the analyst would see."""
    from rebuttal.types import InputError

    memory = _memory(index, k)
    try:
        result = memory.query(text)
    except InputError as exc:
        _fail(str(exc))
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
        return
    typer.echo(f"predicted: {result.predicted.value}   purity ρ = {result.purity:.2f} "
               f"({'ambiguous: ' + ' / '.join(c.value for c in result.candidates) if result.ambiguous else 'clear'}"
               f", threshold {result.threshold:g}, k={result.k})")
    for category, score in sorted(result.scores.items(), key=lambda kv: -kv[1]):
        typer.echo(f"  S[{category.value:<15}] = {score:.3f}")
    typer.echo("exemplars:")
    for record in result.exemplars:
        typer.echo(f"  [{record.id}] ({record.category.value}, {record.target_group}) "
                   f"{_clip(record.hate_speech)}")


@app.command("eval")
def eval_command(
    data: DataOption,
    index: Annotated[str | None, typer.Option("--index", help="saved memory; default: shipped")] = None,
    k: Annotated[int | None, typer.Option(help="override k")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Accuracy of t̂ against gold categories, confusion matrix, accuracy by purity band."""
    from rebuttal.memory.evaluate import evaluate, format_report

    records = _records(data)
    memory = _memory(index, k)
    report = evaluate(memory, records)
    typer.echo(json.dumps(report.model_dump(mode="json"), indent=2) if as_json else format_report(report))


def _clip(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


if __name__ == "__main__":
    app()
