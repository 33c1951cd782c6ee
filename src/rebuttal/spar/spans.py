"""Exact-substring work: locating model spans in the post, sentence splitting, tightening."""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from rebuttal.data.vocab import IMPLICIT_TARGET, OUTPUT_IMPLICIT
from rebuttal.types import SparTuple

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
    """The span as it is written in `text` (exact casing) with edge punctuation removed; "" when
    it is not in `text` (never the model's own words)."""
    if is_implicit(span):
        return OUTPUT_IMPLICIT
    found = locate(span, text)
    if found is None:
        return ""
    exact = text[found[0]:found[1]]
    return exact.strip(_EDGE) or exact.strip()


def fuzzy_window(span: str, text: str, min_ratio: float = 0.6) -> str | None:
    """The substring of `text` most similar to `span` (difflib ratio ≥ min_ratio), searched
    around the longest common blocks and snapped to word edges for spaced scripts; else None."""
    span = span.strip()
    if not span or not text.strip():
        return None
    blocks = sorted(SequenceMatcher(None, text, span, autojunk=False).get_matching_blocks()[:-1],
                    key=lambda b: -b.size)[:5]
    spaced = " " in text
    best, best_ratio = None, min_ratio
    for block in blocks:
        anchor = max(0, block.a - block.b)
        for start in {anchor, block.a}:
            for length in {len(span), len(span) - (block.a - start), block.size}:
                lo, hi = _snap(text, start, min(len(text), start + max(1, length)), spaced)
                window = text[lo:hi].strip(_EDGE)
                if not window:
                    continue
                ratio = SequenceMatcher(None, window.lower(), span.lower()).ratio()
                if ratio > best_ratio:
                    best, best_ratio = window, ratio
    return best


def _snap(text: str, start: int, end: int, spaced: bool) -> tuple[int, int]:
    if not spaced:
        return start, end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return start, end


def ground(span: str, text: str) -> tuple[str, str] | None:
    """(substring of `text`, how) for a model span: `exact`, `located` (trimmed, case or
    whitespace differences) or `fuzzy` (best matching window); None when nothing fits."""
    if span in text and span.strip():
        return span, "exact"
    found = locate(span, text)
    if found is not None:
        piece = text[found[0]:found[1]]
        piece = piece.strip(_EDGE) or piece.strip()
        return (piece, "located") if piece else None
    window = fuzzy_window(span, text)
    return (window, "fuzzy") if window else None


def ground_tuples(tuples: list[SparTuple], post: str) -> tuple[list[SparTuple], list[str]]:
    """Every target (unless NULL) and argument made an exact substring of the post: repaired to
    one, or the tuple dropped. Returns the kept tuples and one reason per repair or drop."""
    kept, reasons = [], []
    for t in tuples:
        fields, dropped = {}, False
        for name in ("target", "argument"):
            value = getattr(t, name)
            if name == "target" and value == OUTPUT_IMPLICIT:
                continue
            found = ground(value, post)
            if found is None:
                reasons.append(f"dropped tuple: {name} {value[:40]!r} is not in the post")
                dropped = True
                break
            if found[0] != value:
                reasons.append(f"repaired {name} {value[:40]!r} -> {found[0][:40]!r} ({found[1]})")
                fields[name] = found[0]
        if not dropped:
            kept.append(t.model_copy(update=fields) if fields else t)
    return kept, reasons
