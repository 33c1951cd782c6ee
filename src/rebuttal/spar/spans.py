"""Exact-substring work: locating model spans in the post, sentence splitting, tightening."""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from rebuttal.spar.settings import IMPLICIT_TARGET, OUTPUT_IMPLICIT

_SENTENCE = re.compile(r"[^.!?。！？…\n]+[.!?。！？…]*[\"'”’」』)）]*", re.UNICODE)
_EDGE = " \t\r\n\"'“”‘’「」『』()（）[]【】<>《》,，.。!！?？:：;；、…~～-—*#"
_IMPLICIT_SPELLINGS = {"", "null", "none", "implicit", "implicit_target", "n/a", "无", "无对象"}
_DELIMS = re.compile(r"<<<|>>>|</?focus>", re.IGNORECASE)


def is_implicit(target: str | None) -> bool:
    return target is None or target.strip().lower() in _IMPLICIT_SPELLINGS


def canonical(target: str | None) -> str:
    return IMPLICIT_TARGET if is_implicit(target) else target.strip()


def output_target(target: str | None) -> str:
    return OUTPUT_IMPLICIT if is_implicit(target) else target.strip()


def as_data(text: str) -> str:
    """Neutralise our delimiters inside user text so a post cannot close its own data block."""
    return _DELIMS.sub(lambda m: m.group(0).replace("<", "‹").replace(">", "›"), text)


def locate(span: str, text: str, start: int = 0) -> tuple[int, int, str] | None:
    """(start, end, how) of `span` in `text`: exact, else with edge whitespace and then edge
    punctuation trimmed, case-sensitive before case-insensitive, else with whitespace runs
    relaxed. None if it is not a substring in any of these senses."""
    if not span or not span.strip():
        return None
    index = text.find(span, start)
    if index < 0 and start:
        index = text.find(span)
    if index >= 0:
        return index, index + len(span), "exact"
    lowered = text.lower()
    for probe, how in ((span.strip(), "trimmed"), (span.strip(_EDGE), "trimmed")):
        if not probe:
            continue
        index = text.find(probe)
        if index >= 0:
            return index, index + len(probe), how
        index = lowered.find(probe.lower())
        if index >= 0:
            return index, index + len(probe), "case"
    pattern = r"\s+".join(re.escape(part) for part in span.strip().split())
    match = re.search(pattern, text, re.IGNORECASE)
    if match:
        return match.start(), match.end(), "whitespace"
    return None


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence-level (start, end) spans; each span's text is an exact, stripped substring."""
    spans = []
    for match in _SENTENCE.finditer(text):
        start, end = match.start(), match.end()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start and text[start:end].strip(_EDGE):
            spans.append((start, end))
    return spans or [(0, len(text))]


def wrap_focus(text: str, start: int, end: int) -> str:
    return f"{text[:start]}<focus>{text[start:end]}</focus>{text[end:]}"


def similarity(a: str, b: str) -> float:
    if is_implicit(a) and is_implicit(b):
        return 1.0
    if is_implicit(a) or is_implicit(b):
        return 0.0
    return SequenceMatcher(None, a.strip().lower(), b.strip().lower()).ratio()


def in_quotation(text: str, start: int, end: int) -> bool:
    """Is text[start:end] inside a pair of quotation marks (reported speech, not an attack)?"""
    before, after = text[:start], text[end:]
    if before.count('"') % 2 == 1 and '"' in after:  # straight quotes; apostrophes are too ambiguous
        return True
    return any(before.rfind(open_) > before.rfind(close) and close in after
               for open_, close in (("“", "”"), ("「", "」"), ("『", "』")))


def tighten(span: str, text: str) -> str:
    """The span as it is written in `text` (exact casing) with edge punctuation removed."""
    if is_implicit(span):
        return OUTPUT_IMPLICIT
    found = locate(span, text)
    exact = text[found[0]:found[1]] if found else span
    tight = exact.strip(_EDGE)
    return tight or exact.strip() or span.strip()
