"""rebuttal: reads online hate speech and answers it.

    import rebuttal
    result = rebuttal.respond("...")        # FIRE: analysis, evidence and a reviewed-ready reply
    result = rebuttal.analyze("...")        # FIRE's analyst only
    result = rebuttal.parse("...", lang="en")  # SPAR-Hate tuples
"""

from __future__ import annotations

from functools import lru_cache

__version__ = "0.1.0"


def analyze(text: str, **settings):
    """Analyse one post with the default FIRE pipeline (embedded model unless configured)."""
    from rebuttal.fire import default_pipeline

    return default_pipeline(**settings).analyze(text)


def respond(text: str, **settings):
    """Analyse one post and, if hateful, write a reply for human review."""
    from rebuttal.fire import default_pipeline

    return default_pipeline(**settings).respond(text)


def parse(text: str, lang: str = "en", track: str | None = None, **settings):
    """Structured hate parsing (SPAR-Hate) of one post."""
    return _parser(**settings).parse(text, lang=lang, track=track)


@lru_cache(maxsize=2)
def _parser(**settings):
    from rebuttal.spar import default_parser

    return default_parser(**settings)  # the model loads once, on first use
