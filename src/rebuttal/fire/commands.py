"""`rebuttal analyze|respond TEXT`: FIRE's commands (plain typer functions; the CLI mounts them)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from rebuttal.fire.advice import advice
from rebuttal.fire.analyst import CategoryPolicy
from rebuttal.llm.options import BackendOpt, BaseUrlOpt, ModelOpt, ThreadsOpt, settings_from_options

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the full result and trace as JSON")]
PolicyOpt = Annotated[CategoryPolicy, typer.Option(
    help="Category policy: learned (default: the trained category model, most accurate on silver dev), "
         "memory (the memory's t̂), constrained (the analyst picks among the memory's candidates), free")]
MemoryOpt = Annotated[str | None, typer.Option(help="Memory index folder (default: the shipped exemplar bank)")]
WebOpt = Annotated[bool, typer.Option("--web", help="Search the web (DuckDuckGo) before the local evidence store")]


def fail(message: str, code: int = 1) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def _show_analysis(result) -> None:
    if result.analysis:
        a = result.analysis
        typer.echo(f"hateful: {a.is_hateful}   target: {a.target_group}   category: {a.category.value}")
        typer.echo(f"reasoning: {a.reasoning}")
        if a.search_query:
            typer.echo(f"search query: {a.search_query}")
        if a.gate:
            llm = "" if a.gate.llm_hateful is None else f", LLM says {'hateful' if a.gate.llm_hateful else 'not hateful'}"
            typer.echo(f"gate: {a.gate.score:.2f} (threshold {a.gate.threshold:.2f}){llm}")
        for vote in a.votes:
            typer.echo(f"vote: {vote.source} -> {vote.category.value}")
        if a.confidence is not None:
            typer.echo(f"category confidence: {a.confidence:.2f}")
    if result.memory:
        m = result.memory
        typer.echo(f"memory: t̂={m.predicted.value} purity={m.purity:.2f}" + (" (ambiguous)" if m.ambiguous else ""))


def show_fire(result) -> None:
    """Readable output for a person; --json gives everything."""
    colour = {"ok": typer.colors.GREEN, "flagged": typer.colors.YELLOW}.get(result.status, typer.colors.RED)
    typer.secho(f"status: {result.status}", fg=colour, bold=True)
    if result.message:
        typer.echo(result.message)
    _show_analysis(result)
    if result.reply:
        typer.secho("\nreply (for review, not posted):", bold=True)
        typer.echo(result.reply.text)
        failed = [c.name for c in result.reply.checks if not c.passed]
        typer.echo(f"checks: {len(result.reply.checks) - len(failed)}/{len(result.reply.checks)} passed"
                   + (f"; failed: {', '.join(failed)}" if failed else ""))
        if result.reply.chosen_because:
            typer.echo(f"kept: {result.reply.chosen_because}")
    if result.status == "flagged":
        typer.secho("\nbefore posting, check:", bold=True)
        for flag in result.trace.flags:
            typer.echo(f"- {flag}: {advice(flag)}")
    if result.evidence:
        typer.secho("\nevidence:", bold=True)
        for number, item in enumerate(result.evidence, 1):
            cited = "cited" if result.reply and item.id in result.reply.cited_evidence_ids else "not cited"
            typer.echo(f"[{number}] {item.id} ({item.tier.value}, {cited}) {item.source}{', ' + item.url if item.url else ''}")
    steps = ", ".join(f"{s.stage} {s.latency_s:.1f}s" for s in result.trace.steps)
    usage = result.trace.usage
    typer.secho(f"\ntrace: {steps}; prompt tokens {usage.prompt_tokens} ({usage.cached_prompt_tokens} reused), "
                f"generated {usage.completion_tokens}", dim=True)


def _fire_command(text: str, reply: bool, json_output: bool, settings, memory, web, policy) -> None:
    from rebuttal.fire.factory import build_system
    from rebuttal.types import InputError, check_post

    try:
        check_post(text)  # before loading any model
    except InputError as exc:
        fail(f"invalid input: {exc}")
    try:
        pipeline = build_system("fire", model_settings=settings, memory_path=memory, web=web, policy=policy)
    except Exception as exc:  # noqa: BLE001 - setup problems become one clear line
        fail(f"{type(exc).__name__}: {exc}")
    result = pipeline.respond(text) if reply else pipeline.analyze(text)
    if json_output:
        typer.echo(json.dumps(result.model_dump(mode="json"), ensure_ascii=False, indent=2))
    else:
        show_fire(result)
    if result.status == "error":
        raise typer.Exit(1)


def analyze_command(text: str, json_output: JsonOpt = False, backend: BackendOpt = None, model: ModelOpt = None,
                    base_url: BaseUrlOpt = None, threads: ThreadsOpt = None, memory: MemoryOpt = None,
                    web: WebOpt = False, policy: PolicyOpt = CategoryPolicy.learned) -> None:
    """FIRE phase 1: is the post hateful, its target, category, reasoning, query and evidence."""
    _fire_command(text, False, json_output, settings_from_options(backend, model, base_url, threads),
                  memory, web, policy)


def respond_command(text: str, json_output: JsonOpt = False, backend: BackendOpt = None, model: ModelOpt = None,
                    base_url: BaseUrlOpt = None, threads: ThreadsOpt = None, memory: MemoryOpt = None,
                    web: WebOpt = False, policy: PolicyOpt = CategoryPolicy.learned) -> None:
    """Analyse a post and write an evidence-grounded reply for human review."""
    _fire_command(text, True, json_output, settings_from_options(backend, model, base_url, threads),
                  memory, web, policy)
