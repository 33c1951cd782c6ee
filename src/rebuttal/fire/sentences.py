"""Sentences of a draft: the split the generator cuts drafts with and the checks read."""

from __future__ import annotations

import re

from rebuttal.learned.text import language

MAX_SENTENCES = 3  # what the prompt asks for; the 1.5B model often wrote six or more
BOUNDARY = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"”’)]))\s+(?=[\"“‘(]?[A-Z0-9])|(?<=[。！？])")
ABBREVIATION = re.compile(r"(?:\b[A-Z]\.|\b(?:Dr|Mr|Mrs|Ms|St|vs|etc|e\.g|i\.e|approx|No)\.)$")
ENDINGS = tuple(".!?。！？…\"”’)")


def sentences(text: str) -> list[str]:
    """Sentence split that keeps "U.S." and "Dr." inside their sentence."""
    parts, start = [], 0
    for boundary in BOUNDARY.finditer(text):
        if not ABBREVIATION.search(text[start : boundary.start()].rstrip("\"”’)")):
            parts.append(text[start : boundary.start()].strip())
            start = boundary.end()
    parts.append(text[start:].strip())
    return [part for part in parts if part]


def first_sentences(text: str, stopped_at_limit: bool) -> tuple[str, bool, int]:
    """The reply as the prompt asks for it: at most MAX_SENTENCES complete sentences. A last
    sentence the token limit cut off is dropped when a complete one stands before it, so
    nothing the model wrote is changed, only left out (the trace notes how much).
    Returns (text, whether it still ends unfinished, sentences left out)."""
    found = sentences(text)
    unfinished = stopped_at_limit or not found or not found[-1].endswith(ENDINGS)
    if unfinished and len(found) > 1:
        found, unfinished = found[:-1], False
        dropped = 1
    else:
        dropped = 0
    kept = found[:MAX_SENTENCES]
    dropped += len(found) - len(kept)
    joiner = "" if language(text) == "zh" else " "
    return (joiner.join(kept) if dropped else text.strip()), unfinished, dropped
