"""`rebuttal parse TEXT --lang en|zh [--track ...] [--system ...] [--explain]` (a plain typer function;
the CLI mounts it), and `rebuttal spar train|ensemble`."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from rebuttal import config
from rebuttal.llm import LLMError, MissingBackend
from rebuttal.llm.options import BackendOpt, BaseUrlOpt, ModelOpt, ThreadsOpt, settings_from_options
from rebuttal.llm.registry import DEFAULT_MODEL, ModelRegistryError, gguf_file
from rebuttal.spar.lexicon import LexiconError
from rebuttal.spar.batch import SparWork
from rebuttal.spar.settings import DEFAULT_SYSTEM, SYSTEMS
from rebuttal.data.vocab import Track
from rebuttal.types import SparResult

SparSystem = StrEnum("SparSystem", {name.replace("-", "_"): name for name in SYSTEMS})  # named as cli.System


def render(result: SparResult) -> str:
    lines = [f"{result.system} · {result.lang} · {result.track} · status {result.status} · "
             f"{result.llm_calls} LLM calls · {result.trace.total_latency_s:.1f}s"]
    if result.message:
        lines.append(f"note: {result.message}")
    for number, t in enumerate(result.tuples, 1):
        group = f" | group={t.group}" if t.group else ""
        lines.append(f"{number}. target={t.target!r} | argument={t.argument!r} | "
                     f"{'hateful' if t.label else 'not hateful'}{group}")
    lines += review_lines(result)
    for step in result.trace.steps:
        lines.append(f"  [{step.stage}] {step.prompt_version or '-'}: " + "; ".join(step.notes))
    for flag in result.trace.flags:
        lines.append(f"  flag: {flag}")
    return "\n".join(lines)


def _label(label: int | None) -> str:
    return {1: "hateful", 0: "not hateful"}.get(label, "no label")


def review_lines(result: SparResult) -> list[str]:
    """spar-tagger+audit: each reviewed tuple, the roles' views and the auditor's decision."""
    lines = ["review (the role agents' views, the auditor's decision):"] if result.reviews else []
    for number, r in enumerate(result.reviews, 1):
        t = r.proposed
        lines.append(f"  {number}. {r.source}: target={t.target!r} | argument={t.argument!r} | {_label(t.label)}"
                     + (f" | group={t.group}" if t.group else "") + f" -> {r.decision.upper()}")
        for v in r.views:
            holds = {True: "holds", False: "does not hold", None: "no verdict"}[v.holds]
            label = f", {_label(v.label)}" if v.label is not None else ""
            lines.append(f"     {v.role}: {holds}{label}" + (f", group={v.group}" if v.group else "")
                         + (f": {v.why}" if v.why else ""))
        lines.append(f"     auditor: {r.reason}")
    return lines


def _system(system: SparSystem, explain: bool) -> str:
    if not explain or system.value == "spar-tagger+audit":
        return system.value
    if system.value != "spar-tagger":
        raise ValueError(f"--explain reviews the tagger's tuples (spar-tagger+audit); it does not go with --system {system.value}")
    return "spar-tagger+audit"


def parse_command(
    text: Annotated[str, typer.Argument(help="The post to parse (quote it).")],
    lang: Annotated[str, typer.Option("--lang", help="en | zh")] = "en",
    track: Annotated[Track | None, typer.Option("--track", help="Benchmark track (default: the language's main track)")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the SparResult as JSON.")] = False,
    backend: BackendOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    threads: ThreadsOpt = None,
    lexicon: Annotated[Path | None, typer.Option("--lexicon", help="STATE-ToxiCN-format lexicon JSON (zh hints).")] = None,
    system: Annotated[SparSystem, typer.Option("--system", help="spar-tagger: the trained tagger alone, no LLM "
                                               "call (default; the shipped taggers, or --model a tagger folder); "
                                               "spar-tagger+audit: the role agents review each tagger tuple and the "
                                               "auditor keeps, relabels or drops it (= --explain); spar: the role "
                                               "agents; spar+tagger; spar-0shot")] = SparSystem(DEFAULT_SYSTEM),
    explain: Annotated[bool, typer.Option("--explain", help="Have the role agents review the tagger's tuples and "
                                          "show their views and the auditor's decisions (spar-tagger+audit; "
                                          "~3 LLM calls a post).")] = False,
) -> None:
    """Parse one post into (target, argument, hateful[, group]) tuples with SPAR-Hate."""
    try:
        chosen = _system(system, explain)
        if lexicon is not None and chosen == "spar-tagger":
            typer.echo("note: --lexicon is read by the role agents; the tagger has its own lexicon feature", err=True)
        settings = settings_from_options(backend, model, base_url, threads)
        parser = SparWork(system=chosen, model_settings=settings, lexicon=lexicon).build_parser()
        result = parser.parse(text, lang=lang, track=track)
    except (LexiconError, MissingBackend, ModelRegistryError, LLMError, ValueError, FileNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(result.model_dump_json(indent=2) if json_output else render(result))
    if result.status == "error":
        raise typer.Exit(1)


spar_app = typer.Typer(help="SPAR-Hate tools: train the span tagger.", no_args_is_help=True)


@spar_app.callback()
def spar_group() -> None:
    """SPAR-Hate tools (mounted as `rebuttal spar`)."""


def _gguf(value: str, option: str) -> Path | None:
    """The GGUF an option names (a path or an embedded model's name), or None for `none`."""
    if value.lower() == "none":
        return None
    try:
        return gguf_file(value)
    except ModelRegistryError as exc:
        raise ModelRegistryError(f"{exc} (train without it: {option} none)") from None


@spar_app.command("train")
def train_command(
    track: Annotated[Track, typer.Option("--track", help="en-main (TBO JSONL) | zh-main | zh-quad (STATE-ToxiCN JSON)")],
    data: Annotated[Path, typer.Option("--data", help="The gold training file, as it is.")],
    out: Annotated[Path | None, typer.Option("--out", help="Folder for weights and model card "
                                                           "(default: <REBUTTAL_HOME>/spar-tagger/<track>).")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="minilm | char (default: minilm for en, char for zh)")] = None,
    encoder: Annotated[str, typer.Option("--encoder", help="char models: bilstm | cnn")] = "bilstm",
    bigrams: Annotated[bool, typer.Option("--bigrams/--no-bigrams", help="char models: character-bigram embeddings")] = True,
    words: Annotated[bool, typer.Option("--words/--no-words", help="char models: jieba word positions")] = True,
    lexicon: Annotated[Path | None, typer.Option("--lexicon", help="zh: STATE-ToxiCN lexicon JSON as a feature.")] = None,
    vectors: Annotated[str, typer.Option("--vectors", help="char models: start the character vectors from a GGUF's "
                                         "token embeddings: a path, an embedded model name, or none.")] = DEFAULT_MODEL,
    context: Annotated[str, typer.Option("--context", help="char models: the hidden states of an embedded model (name or "
                                         "GGUF path) as a feature, or none. Computed once per post (~0.4 s) "
                                         "and kept in --context-cache.")] = "none",
    context_cache: Annotated[Path | None, typer.Option("--context-cache", help="Folder for those states "
                                                       "(default: <cache>/spar-context/<model>).")] = None,
    context_layers: Annotated[int | None, typer.Option("--context-layers", min=1, help="Read --context's states "
                                                       "after this many layers (default: the last).")] = None,
    epochs: Annotated[int | None, typer.Option("--epochs", help="Default: 4 (minilm), 16 (char).")] = None,
    dev_size: Annotated[int, typer.Option("--dev-size", help="Posts held out for evaluation.")] = 300,
    val_size: Annotated[int, typer.Option("--val-size", help="Posts held out to choose the epoch.")] = 250,
    seed: Annotated[int | None, typer.Option("--seed", help="Split seed (default: the project's fixed seed).")] = None,
    init_seed: Annotated[int | None, typer.Option("--init-seed", help="Seed of the weights and batch order "
                                                 "(default: the split seed); ensemble members differ here.")] = None,
    threads: Annotated[int, typer.Option("--threads", help="Torch CPU threads.")] = 1,
) -> None:
    """Train the span tagger on a gold file; `rebuttal run --system spar-tagger` then uses it."""
    from rebuttal.optional import MissingBackend as MissingTorch
    from rebuttal.data.gold import GoldFormatError
    from rebuttal.spar.tagger.parser import default_root
    from rebuttal.spar.tagger.train import SPLIT_SEED, TrainSettings, train_tagger

    try:
        settings = TrainSettings(track=Track(track).value, kind=kind, encoder=encoder, bigrams=bigrams, words=words,
                                 lexicon=lexicon, epochs=epochs, dev_size=dev_size, val_size=val_size,
                                 seed=SPLIT_SEED if seed is None else seed, init_seed=init_seed, threads=threads)
        settings.vectors = _gguf(vectors, "--vectors") if settings.kind == "char" else None
        if settings.kind == "char" and _gguf(context, "--context"):
            settings.context, settings.context_layers = context, context_layers
            settings.context_cache = context_cache or config.cache_dir() / "spar-context" / (
                Path(context).stem + (f".first{context_layers}" if context_layers else ""))
        train_tagger(data, out or default_root() / Track(track).value, settings, log=typer.echo)
    except (GoldFormatError, LexiconError, MissingTorch, ModelRegistryError, ValueError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


@spar_app.command("ensemble")
def ensemble_command(
    folders: Annotated[list[Path], typer.Argument(help="Tagger folders trained alike with different --init-seed.")],
    data: Annotated[Path, typer.Option("--data", help="The gold file they were trained on (for the validation split).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the ensemble's weights and model card.")],
) -> None:
    """Join taggers trained alike into one that averages them (decoding chosen again on validation)."""
    from rebuttal.optional import MissingBackend as MissingTorch
    from rebuttal.data.gold import GoldFormatError
    from rebuttal.spar.tagger.train import ensemble_taggers

    try:
        ensemble_taggers(folders, data, out, log=typer.echo)
    except (GoldFormatError, MissingTorch, ModelRegistryError, ValueError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
