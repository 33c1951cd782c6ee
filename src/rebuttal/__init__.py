"""rebuttal: reads online hate speech and answers it.

    import rebuttal
    result = rebuttal.respond("...")        # FIRE: analysis, evidence and a reviewed-ready reply
    result = rebuttal.analyze("...")        # FIRE's analyst only
    result = rebuttal.parse("...", lang="en")  # SPAR-Hate tuples (the trained span tagger, no LLM call)
    result = rebuttal.parse("...", lang="en", system="spar-tagger+audit")  # + the role agents' review
"""

from __future__ import annotations

from functools import lru_cache

__version__ = "0.1.0"


MODEL_KEYS = ("backend", "model", "base_url", "threads")


def _split(settings: dict):
    """(ModelSettings, the rest): backend/model/base_url/threads describe the model."""
    from rebuttal.llm import ModelSettings

    model = ModelSettings.of(**{k: settings.pop(k) for k in MODEL_KEYS if k in settings})
    return model, settings


def analyze(text: str, **settings):
    """Analyse one post with the default FIRE pipeline (embedded model unless configured).
    `settings`: backend, model, base_url, threads (the model), web, memory_path."""
    from rebuttal.fire import default_pipeline

    model, rest = _split(dict(settings))
    return default_pipeline(model, **rest).analyze(text)


def respond(text: str, **settings):
    """Analyse one post and, if hateful, write a reply for human review."""
    from rebuttal.fire import default_pipeline

    model, rest = _split(dict(settings))
    return default_pipeline(model, **rest).respond(text)


def parse(text: str, lang: str = "en", track: str | None = None, system: str = "spar-tagger", **settings):
    """Structured hate parsing (SPAR-Hate) of one post. `system`: spar-tagger (the trained tagger,
    no LLM call; the default), spar-tagger+audit (the role agents review each tagger tuple: the
    result's `reviews`), spar (the role agents), spar+tagger or spar-0shot. `settings`: the model
    keys (for spar-tagger, `model` may name a tagger folder) and, for the agent systems,
    SparSettings fields."""
    model, rest = _split(dict(settings))
    return _parser(model, system=system, **rest).parse(text, lang=lang, track=track)


@lru_cache(maxsize=2)
def _parser(model_settings, **settings):
    from rebuttal.spar import default_parser

    return default_parser(model_settings, **settings)  # the model or tagger loads once, on first use
