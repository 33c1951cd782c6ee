"""Phase 1: split a post into clause-level units whose text is an exact substring of the post."""

from __future__ import annotations

from dataclasses import dataclass

from rebuttal.llm import ChatModel
from rebuttal.llm.prompts import load_prompt
from rebuttal.spar.calls import Stage, call_object
from rebuttal.spar.schemas import Segmentation
from rebuttal.spar.settings import SparSettings
from rebuttal.data.vocab import IMPLICIT_TARGET
from rebuttal.spar.spans import as_data, canonical, locate, sentence_spans, wrap_focus

PACKAGE = "rebuttal.spar"


@dataclass
class Unit:
    group_id: str
    local_group_id: int
    group_text: str
    start: int
    end: int
    focus_text: str
    canonical_target: str = IMPLICIT_TARGET
    source: str = "segmenter"  # segmenter | repaired | sentence-split | whole-post

    def prompt_focus(self) -> str:
        """The focus text for a prompt: the post's own delimiters neutralised, ours kept."""
        before = self.focus_text[: self.start]
        after = self.focus_text[self.start + len("<focus>") + len(self.group_text) + len("</focus>"):]
        return f"{as_data(before)}<focus>{as_data(self.group_text)}</focus>{as_data(after)}"

    def as_dict(self) -> dict:
        return {"group_id": self.group_id, "local_group_id": self.local_group_id,
                "group_text": self.group_text, "focus_text": self.focus_text,
                "canonical_target": self.canonical_target, "source": self.source}


def _make_units(post: str, spans: list[tuple[int, int, str, str]], post_id: str) -> list[Unit]:
    return [
        Unit(group_id=f"{post_id}-g{i}", local_group_id=i, group_text=post[s:e], start=s, end=e,
             focus_text=wrap_focus(post, s, e), canonical_target=target, source=source)
        for i, (s, e, target, source) in enumerate(spans, 1)
    ]


def whole_post_unit(post: str, post_id: str) -> list[Unit]:
    """The no-segmenter ablation: one unit, the whole post in focus."""
    return _make_units(post, [(0, len(post), IMPLICIT_TARGET, "whole-post")], post_id)


def sentence_units(post: str, post_id: str, max_units: int) -> list[Unit]:
    spans = [(s, e, IMPLICIT_TARGET, "sentence-split") for s, e in sentence_spans(post)]
    return _make_units(post, _cap(spans, max_units), post_id)


def _cap(spans: list[tuple[int, int, str, str]], max_units: int) -> list[tuple[int, int, str, str]]:
    """Merge units beyond `max_units` into the last kept one (nothing of the post is dropped)."""
    if len(spans) <= max_units:
        return spans
    keep = spans[: max_units - 1]
    tail = spans[max_units - 1:]
    keep.append((tail[0][0], tail[-1][1], tail[0][2], tail[0][3]))
    return keep


def verify(post: str, segmentation: Segmentation, stage: Stage) -> list[tuple[int, int, str, str]]:
    """Keep units whose text is found in the post (repairing near-misses), in reading order,
    without overlaps; canonical targets not in the post become IMPLICIT_TARGET."""
    found = []
    cursor = 0
    for unit in sorted(segmentation.units, key=lambda u: u.local_group_id):
        where = locate(unit.group_text, post, cursor)
        if where is None:
            stage.note(f"unit {unit.local_group_id}: group_text not in post, dropped")
            continue
        start, end, how = where
        source = "segmenter"
        if how != "exact":
            stage.note(f"unit {unit.local_group_id}: group_text repaired ({how})")
            source = "repaired"
        target = canonical(unit.canonical_target)
        if target != IMPLICIT_TARGET:
            anchor = locate(target, post)
            if anchor is None:
                stage.note(f"unit {unit.local_group_id}: canonical_target not in post -> {IMPLICIT_TARGET}")
                target = IMPLICIT_TARGET
            else:
                target = post[anchor[0]:anchor[1]]
        found.append((start, end, target, source))
        cursor = end
    found.sort()
    clean = []
    for span in found:
        if clean and span[0] < clean[-1][1]:
            stage.note(f"unit at {span[0]}: overlaps the previous unit, dropped")
            continue
        clean.append(span)
    return clean


def segment(model: ChatModel, post: str, post_id: str, settings: SparSettings) -> tuple[list[Unit], Stage]:
    stage = Stage("segmenter")
    if not settings.use_segmenter:
        stage.note("ablation: no segmenter, whole post is one unit")
        return whole_post_unit(post, post_id), stage
    prompt = load_prompt(PACKAGE, "segmenter")
    stage.uses(prompt.version)
    messages = [{"role": "user", "content": prompt.render(post=as_data(post), max_units=settings.max_units)}]
    value, _raw = call_object(model, messages, Segmentation, stage,
                              max_tokens=settings.max_tokens_segmenter, label="segmenter")
    spans = verify(post, value, stage) if value is not None else []
    if not spans:
        stage.flag("fallback: sentence splitting")
        return sentence_units(post, post_id, settings.max_units), stage
    if len(spans) > settings.max_units:
        stage.note(f"{len(spans)} units merged down to {settings.max_units}")
    return _make_units(post, _cap(spans, settings.max_units), post_id), stage
