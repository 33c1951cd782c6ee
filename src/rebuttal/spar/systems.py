"""Parsers by system name, the one place `rebuttal parse`, `rebuttal run`, `rebuttal.parse` and
`rebuttal.spar.default_parser` build them. The default is the trained span tagger
(`spar-tagger`, no LLM call); the role agents stay available by name."""

from __future__ import annotations

from pathlib import Path

from rebuttal.llm import ModelSettings, load_model
from rebuttal.spar.pipeline import SparParser
from rebuttal.spar.settings import DEFAULT_SYSTEM, SYSTEMS, SparSettings

AGENT_SYSTEMS = tuple(s for s in SYSTEMS if s != "spar-tagger")


def tagger_parser(model_settings: ModelSettings | None):
    """`spar-tagger`: taggers from the `--model` folder when it is one (a tagger, or one folder
    per track), else from the default folder `rebuttal spar train` writes to, else the shipped ones."""
    from rebuttal.spar.tagger.parser import TaggerParser

    folder = model_settings.model if model_settings is not None else None
    return TaggerParser(folder if folder and Path(folder).is_dir() else None)


def _loader(model_settings: ModelSettings | None, model):
    """`model` itself (a ChatModel, or a zero-argument factory such as a service's shared
    loader), else a factory loading `model_settings` (the embedded default) on first use."""
    if model is not None:
        return model
    model_settings = model_settings or ModelSettings()
    return lambda: load_model(model_settings)


def agents_parser(model_settings: ModelSettings | None = None, *, model=None, **settings) -> SparParser:
    """The role agents on the configured model (the embedded default unless `model_settings`
    says otherwise), loaded on first use. Keyword arguments are SparSettings fields."""
    return SparParser(_loader(model_settings, model), SparSettings(**settings))


def default_parser(model_settings: ModelSettings | None = None, *, system: str = DEFAULT_SYSTEM,
                   lexicon: str | Path | None = None, model=None, **settings):
    """A parser for `system` (default `spar-tagger`: the trained tagger, no LLM call). The agent
    systems load their chat model on first use, or use `model` (a ChatModel or a factory);
    keyword arguments are SparSettings fields (the tagger alone takes none). `lexicon`: the
    slang lexicon the role agents read (zh)."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose one of {', '.join(SYSTEMS)}")
    if system == "spar-tagger":
        if settings:
            raise ValueError(f"{', '.join(sorted(settings))}: SparSettings apply to the agent systems "
                             f"({', '.join(AGENT_SYSTEMS)}), not to spar-tagger")
        return tagger_parser(model_settings)
    if system == "spar-tagger+audit":
        from rebuttal.spar.tuple_audit import AuditedTaggerParser

        return AuditedTaggerParser(_loader(model_settings, model), SparSettings(lexicon_path=lexicon, **settings),
                                   tagger=tagger_parser(None))  # the model settings name the chat model here
    parser = agents_parser(model_settings, model=model, zero_shot=system == "spar-0shot", lexicon_path=lexicon,
                           **settings)
    if system == "spar+tagger":
        parser.tagger = tagger_parser(None)
    return parser
