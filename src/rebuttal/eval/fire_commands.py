"""`rebuttal eval fire`: the typer command function (mounted by rebuttal.cli).

    eval_app.command("fire")(eval_fire)
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from rebuttal.llm.options import BackendOpt, BaseUrlOpt, ModelOpt, ThreadsOpt, settings_from_options


class FactJudgeChoice(StrEnum):
    llm = "llm"
    nli = "nli"
    none = "none"


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


def eval_fire(
    pred: Annotated[Path, typer.Option("--pred", help="Predictions JSONL (`rebuttal run` rows or {id, category, counterspeech})")],
    gold: Annotated[Path, typer.Option("--gold", help="Gold JSONL in the FactualCS format")],
    report: Annotated[Path | None, typer.Option("--report", help="Folder for report.md/.html/.json and PNGs")] = None,
    compare: Annotated[Path | None, typer.Option("--compare", help="A second system's predictions: paired t-tests")] = None,
    metrics: Annotated[str | None, typer.Option(help="Comma-separated subset, e.g. rouge1,meteor,catacc")] = None,
    fact_judge: Annotated[FactJudgeChoice, typer.Option(help="FSc judge: chat model, local NLI model, or none")] = FactJudgeChoice.llm,
    nli_model: Annotated[Path | None, typer.Option(help="Local NLI model folder (with --fact-judge nli)")] = None,
    backend: BackendOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    threads: ThreadsOpt = None,
    detoxify_checkpoint: Annotated[Path | None, typer.Option(help="Local Detoxify checkpoint; else the shipped toxicity judge")] = None,
) -> None:
    """Score counterspeech against FactualCS gold: ROUGE, METEOR, BERTScore, CoSim, repetition,
    diversity, novelty, toxicity, CatAcc and FSc, with paired t-tests and a report."""
    from rebuttal.eval.fire_io import EvalInputError
    from rebuttal.eval.fire_metrics import Judges, default_judges, evaluate_fire
    from rebuttal.eval.judges import JudgeWeightsError
    from rebuttal.eval.lexical import WordNetMissing
    from rebuttal.llm.base import LLMError
    from rebuttal.optional import MissingBackend

    wanted = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
    chat = None
    try:
        if fact_judge is FactJudgeChoice.nli and nli_model is None:
            _fail("--fact-judge nli needs --nli-model FOLDER")
        if fact_judge is FactJudgeChoice.llm and (wanted is None or "fsc" in wanted):
            from rebuttal.llm import load_model

            chat = load_model(settings_from_options(backend, model, base_url, threads))
        judges: Judges = default_judges(
            fact_model=chat, nli_model=nli_model if fact_judge is FactJudgeChoice.nli else None,
            detoxify_checkpoint=detoxify_checkpoint,
        )
        result = evaluate_fire(pred, gold, compare_path=compare, report_dir=report, judges=judges,
                               metrics=wanted)
    except (EvalInputError, WordNetMissing, JudgeWeightsError, MissingBackend, ValueError,
            FileNotFoundError) as exc:
        _fail(str(exc))
    except LLMError as exc:
        _fail(f"the FSc judge model failed: {exc} (use --fact-judge none to skip FSc)")
    finally:
        if chat is not None:
            chat.close()
    _print_result(result, report)


def _print_result(result, report: Path | None) -> None:
    labels = list(result.metrics)
    typer.echo("system".ljust(18) + "".join(f"{m.label + ('↑' if m.higher_is_better else '↓'):>9}" for m in labels))
    for system in result.systems:
        cells = "".join(
            f"{system.means[m.key]:9.3f}" if system.means.get(m.key) is not None else f"{'n/a':>9}"
            for m in labels
        )
        typer.echo(f"{system.name[:17]:18}{cells}")
        unscored = len(system.missing_in_pred) + len(system.no_reply)
        typer.echo(f"{'':18}scored {system.n_scored}/{system.n_gold}, unscored {unscored}, "
                   f"not in gold {len(system.extra_in_pred)}, bad rows {len(system.bad_rows)}")
    for test in result.tests:
        if test.significant:
            typer.echo(f"  {test.metric}: {test.better} better (t={test.t:.2f}, p={test.p:.3g})")
    for note in result.notes:
        typer.secho(f"note: {note}", fg=typer.colors.YELLOW, err=True)
    if report is not None:
        typer.echo(f"report: {report / 'report.html'}")
