"""The tagger's data design (pure Python, no torch): BIO tags over units, decoding, pairing.

A *unit* is a (start, end) character span of the post: one character for the Chinese model,
one word piece for MiniLM. Two BIO layers (targets, arguments) let spans overlap, as they do
in TBO ("you people" is often both). Each argument unit also carries three attributes: the
harmful label, whether its target is implicit (NULL) and (Chinese) the STATE-ToxiCN group.
Decoded spans are slices of the post, so every output span is an exact substring by
construction. Pairing is a heuristic: an argument takes the overlapping target, else the
nearest one before it, else the nearest after it, unless its NULL attribute says implicit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from difflib import SequenceMatcher

from rebuttal.data.vocab import NON_HATE, OUTPUT_IMPLICIT, normalize_group
from rebuttal.types import SparTuple

O, B, I = 0, 1, 2  # noqa: E741 - the BIO tag names
IGNORE = -100
Unit = tuple[int, int]


@dataclass
class Encoded:
    """Per-unit training targets of one post."""

    target: list[int]
    argument: list[int]
    harm: list[int]
    null: list[int]
    group: list[int]


def _covering(units: list[Unit], start: int, end: int) -> list[int]:
    return [i for i, (s, e) in enumerate(units) if s < end and e > start and e > s]


def find_span(text: str, span: str, after: int = 0) -> tuple[int, int] | None:
    if not span or span == OUTPUT_IMPLICIT:
        return None
    at = text.find(span, after)
    if at < 0:
        at = text.find(span)
    return (at, at + len(span)) if at >= 0 else None


def encode(text: str, units: list[Unit], tuples: list[SparTuple], groups: list[str]) -> Encoded:
    """Gold tuples as unit tags; spans that are not substrings of the post are skipped."""
    n = len(units)
    enc = Encoded([O] * n, [O] * n, [IGNORE] * n, [IGNORE] * n, [IGNORE] * n)
    for t in tuples:
        for layer, span in ((enc.target, t.target), (enc.argument, t.argument)):
            where = find_span(text, span)
            if where is None:
                continue
            covered = _covering(units, *where)
            for k, i in enumerate(covered):
                if layer[i] == O or k == 0:
                    layer[i] = B if k == 0 else I
            if layer is enc.argument:
                for i in covered:
                    enc.harm[i] = t.label
                    enc.null[i] = int(t.target == OUTPUT_IMPLICIT)
                    if groups:
                        group = normalize_group(t.group)
                        enc.group[i] = groups.index(group) if group in groups else groups.index("others")
    return enc


def decode_spans(tags: list[int]) -> list[tuple[int, int]]:
    """[(first unit, last unit + 1)] from BIO tags; a stray I opens a span."""
    spans, start = [], None
    for i, tag in enumerate(tags):
        if tag == B or (tag == I and start is None):
            if start is not None:
                spans.append((start, i))
            start = i
        elif tag == O and start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(tags)))
    return spans


@dataclass
class ArgumentSpan:
    start: int  # character offsets in the post
    end: int
    harm: float  # P(harmful)
    null: float  # P(implicit target)
    group: list[float] | None = None  # P(group) over the tagger's group classes


def char_span(text: str, units: list[Unit], first: int, last: int) -> tuple[int, int] | None:
    """Characters of units[first:last], whitespace-trimmed; None if nothing is left."""
    start, end = units[first][0], units[last - 1][1]
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def pair(text: str, targets: list[tuple[int, int]], arguments: list[ArgumentSpan],
         groups: list[str] | None) -> list[SparTuple]:
    """Tuples from decoded spans (see the module docstring); exact duplicates removed."""
    out: list[SparTuple] = []
    for arg in arguments:
        target = OUTPUT_IMPLICIT
        if targets and arg.null < 0.5:
            overlapping = [t for t in targets if t[0] < arg.end and t[1] > arg.start]
            before = [t for t in targets if t[1] <= arg.start]
            after = [t for t in targets if t[0] >= arg.end]
            chosen = (overlapping[0] if overlapping else max(before, key=lambda t: t[1]) if before
                      else min(after, key=lambda t: t[0]))
            target = text[chosen[0]:chosen[1]]
        group = None
        label = int(arg.harm >= 0.5)
        if groups:
            best = max(range(len(groups)), key=lambda k: arg.group[k])
            group = groups[best]
            label = int(group != NON_HATE)
        t = SparTuple(target=target, argument=text[arg.start:arg.end], label=label, group=group)
        if t not in out:
            out.append(t)
    return out


def carve(posts: list, seed: int, dev_size: int, val_size: int) -> tuple[list, list, list]:
    """(train, val, dev): `dev` is the held-out evaluation split, `val` picks the epoch; both
    drawn from the shuffled training file with a fixed seed, disjoint from `train`."""
    order = list(posts)
    random.Random(seed).shuffle(order)
    if dev_size + val_size >= len(order):
        raise ValueError(f"{len(order)} posts cannot give {dev_size} dev and {val_size} validation posts")
    return order[dev_size + val_size:], order[dev_size:dev_size + val_size], order[:dev_size]


def _same(a: SparTuple, b: SparTuple, soft: bool) -> bool:
    if a.label != b.label:
        return False
    if not soft:
        return a.target == b.target and a.argument == b.argument
    return all(SequenceMatcher(None, x, y).ratio() >= 0.5 for x, y in ((a.target, b.target), (a.argument, b.argument)))


def tuple_f1(predicted: list[list[SparTuple]], gold: list[list[SparTuple]], soft: bool = False) -> float:
    """Micro F1 of (target, argument, label) triples, exact or soft (difflib ratio ≥ 0.5 on target
    and argument, as the STATE-ToxiCN scorer); each gold triple matches once."""
    tp = n_pred = n_gold = 0
    for preds, golds in zip(predicted, gold):
        free = list(golds)
        n_pred, n_gold = n_pred + len(preds), n_gold + len(golds)
        for t in preds:
            match = next((g for g in free if _same(t, g, soft)), None)
            if match is not None:
                free.remove(match)
                tp += 1
    return 2 * tp / (n_pred + n_gold) if n_pred + n_gold else 0.0


def val_score(predicted: list[list[SparTuple]], gold: list[list[SparTuple]]) -> float:
    """What epochs and decoding options are chosen by: the mean of hard and soft triple F1."""
    return (tuple_f1(predicted, gold) + tuple_f1(predicted, gold, soft=True)) / 2


def merge_close(spans: list[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """Join unit spans separated by at most `gap` units (argmax BIO decoding fragments them)."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and start - out[-1][1] <= gap:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out
