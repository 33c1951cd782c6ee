"""Prompt assembly shared by FIRE's agents and baselines.

FIRE's analyst sees the system text (categories, target groups) and the post (`post_prefix`);
the generator gets a fresh, short conversation of its own (generator.py). Neither sees exemplar
posts: with them in context the 1.5B model answered an exemplar instead of the post (issue 12).
The baselines keep the paper's shape (`shared_prefix`: exemplars, then the post).
"""

from __future__ import annotations

from collections.abc import Sequence

from enum import StrEnum

from pydantic import BaseModel, Field

from rebuttal.llm import ChatModel, Completion, Message
from rebuttal.llm.prompts import load_prompt
from rebuttal.types import EvidenceItem, HateType

PACKAGE = "rebuttal.fire"
MAX_EXAMPLE_CHARS = 320  # keeps prompts compact: CPU prompt processing dominates latency


def prompt(name: str, version: int | None = None):
    return load_prompt(PACKAGE, name, version)


def ask_letter(model: ChatModel, name: str, max_tokens: int, **fields) -> tuple[str, Completion]:
    """A multiple-choice question on its own short system text (prompt `name` and `name`_system):
    the first letter of the answer, upper-cased, and the completion for the trace."""
    messages = [{"role": "system", "content": prompt(f"{name}_system").template.strip()},
                {"role": "user", "content": prompt(name).render(**fields).strip()}]
    completion = model.generate(messages, max_tokens=max_tokens)
    return completion.text.strip()[:1].upper(), completion


def quote_post(text: str) -> str:
    """The post goes between <post> tags as data; a closing tag inside it must not end it."""
    return text.replace("<post>", "‹post›").replace("</post>", "‹/post›")


def clip(text: str | None, limit: int = MAX_EXAMPLE_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class Exemplar(BaseModel):
    """The parts of a memory record that prompts show."""

    id: str
    post: str
    category: HateType
    target_group: str
    reasoning: str = ""
    reply: str = ""
    evidence: str | None = None
    evidence_source: str | None = None
    is_hateful: bool = True

    @classmethod
    def from_record(cls, record) -> Exemplar:
        return cls(
            id=record.id, post=record.hate_speech, category=record.category,
            target_group=record.target_group, reasoning=record.reasoning or "",
            reply=record.counterspeech or "", evidence=record.evidence,
            evidence_source=record.evidence_source, is_hateful=record.is_hateful,
        )


def render_exemplars(exemplars: Sequence[Exemplar], *, with_evidence: bool = False,
                     with_replies: bool = False) -> str:
    if not exemplars:
        return "(none)"
    blocks = []
    for number, ex in enumerate(exemplars, 1):
        label = ex.category.value if ex.is_hateful else "not hateful"
        lines = [
            f"[Example {number}] category: {label}; target: {ex.target_group}",
            f"Post: \"{clip(ex.post)}\"",
            f"Reasoning: {clip(ex.reasoning, 200)}",
        ]
        if with_evidence and ex.evidence:
            lines.append(f"Evidence: {clip(ex.evidence)} ({ex.evidence_source or 'source not given'})")
        if with_replies and ex.reply:
            lines.append(f"Reply: {clip(ex.reply)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def shared_prefix(
    post: str, exemplars: Sequence[Exemplar], memory_note: str, *, with_evidence: bool = False,
    with_replies: bool = False,
) -> list[Message]:
    context = prompt("context", version=1).render(
        memory_note=memory_note,
        exemplars=render_exemplars(exemplars, with_evidence=with_evidence, with_replies=with_replies),
        post=quote_post(post),
    )
    return [
        {"role": "system", "content": prompt("system").template.strip()},
        {"role": "user", "content": context.strip()},
    ]


def post_prefix(post: str) -> list[Message]:
    """System text and the post, nothing else: what FIRE's analyst reads before its task."""
    return [
        {"role": "system", "content": prompt("system").template.strip()},
        {"role": "user", "content": prompt("post").render(post=quote_post(post)).strip()},
    ]


def render_evidence(evidence: Sequence[EvidenceItem]) -> str:
    if not evidence:
        return ""
    lines = ["Evidence (use one of these facts, in your own words, and cite it by number, e.g. [1]; "
             "use no other facts or sources):"]
    for number, item in enumerate(evidence, 1):
        dated = f", {item.date}" if item.date else ""
        lines.append(f"[{number}] {clip(item.text, 240)} ({item.source}{dated})")
    return "\n".join(lines)


def citation_rule(evidence: Sequence[EvidenceItem]) -> str:
    if evidence:
        return f"Support factual statements with the evidence, citing [1] to [{len(evidence)}]."
    return "Do not cite numbers, studies or sources."


class ReplyDraft(BaseModel):
    """Field order is decoding order: the model first names the claim it answers (kept in the
    trace), then answers it; with the bare reply alone the 1.5B model drifted from the post."""

    claim: str = Field(max_length=200)
    # No max_length: the grammar would spell it out char by char; max_tokens bounds decoding and
    # the generator keeps the first three sentences.
    reply: str = Field(min_length=20)


class BaselineOutput(BaseModel):
    """The zero-shot baseline's one-call answer (FIRE paper, appendix A.11), also the answer of
    FIRE's `draft_baseline` generator form: the model analyses the post, then writes the reply."""

    target_group: str = Field(max_length=40)
    hs_type: HateType
    analyst_reasoning: str = Field(max_length=400)
    retrieval_query: str | None = Field(default=None, max_length=160)
    retrieved_evidence: str | None = Field(default=None, max_length=600)
    counterspeech: str = Field(min_length=20, max_length=900)

    @property
    def claim(self) -> str:
        return self.analyst_reasoning

    @property
    def reply(self) -> str:
        return self.counterspeech


AnalystCategory = StrEnum("AnalystCategory", {**{t.name: t.value for t in HateType}, "none": "none"})


class AnalystOutput(BaseModel):
    """What the analyst model answers. Field order is decoding order: it reasons before it
    labels. "Not hateful" is a sixth category, `none`: the embedded small models judged a
    separate is_hateful flag badly (they answered false for posts they had just called false
    claims about a group) but pick `none` correctly."""

    reasoning: str = Field(max_length=300)
    target_group: str = Field(max_length=40)
    category: AnalystCategory
    search_query: str | None = Field(default=None, max_length=160)
    override_reason: str | None = Field(default=None, max_length=200)

    @property
    def hate_type(self) -> HateType | None:
        return None if self.category == "none" else HateType(self.category.value)
