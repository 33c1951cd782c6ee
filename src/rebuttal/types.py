"""Typed results shared by every stage. Depends on nothing else in rebuttal."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

TARGET_GROUPS = (
    "Women", "Men", "LGBT+", "Muslims", "Jews", "Immigrants", "People of color", "Disabled",
    "Other religions", "Political group", "Occupation", "Individual", "Affected person", "Others",
)


class HateType(StrEnum):
    misinformation = "misinformation"
    stereotype = "stereotype"
    conspiracy = "conspiracy"
    dehumanization = "dehumanization"
    nonfactual = "nonfactual"

    @property
    def needs_evidence(self) -> bool:
        """Only claims that can be checked get evidence (FIRE, Table 8)."""
        return self in FACTUAL_TYPES

    @property
    def strategy(self) -> str:
        return STRATEGIES[self]


FACTUAL_TYPES = frozenset({HateType.misinformation, HateType.stereotype, HateType.conspiracy})

STRATEGIES = {
    HateType.misinformation: "rebut with facts, data and authoritative sources",
    HateType.conspiracy: "debunk the narrative pattern of a secret plot; inoculate against it",
    HateType.stereotype: "reframe; give counter-examples and show the group's diversity",
    HateType.dehumanization: "recall moral, legal and social norms; re-humanise the group",
    HateType.nonfactual: "respond with empathy and reinforce social norms",
}


class SourceTier(StrEnum):
    institutional = "institutional"  # government statistics, UN, academies, peer review
    mainstream = "mainstream"  # encyclopaedias, major press, fact-checkers
    social = "social"
    low = "low"  # dropped before generation


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # prompt tokens served from the backend's KV cache

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
        )


class TraceStep(BaseModel):
    stage: str
    model: str | None = None
    prompt_version: str | None = None
    latency_s: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    attempts: int = 1  # LLM calls made; steps that `record` calls are created with attempts=0
    notes: list[str] = Field(default_factory=list)

    def record(self, outcome: Any) -> TraceStep:
        """Add one structured call's cost to this step: `outcome` is anything with `latency_s`,
        `usage` and `attempts` (a `StructuredResult` or a `StructuredOutputError`). It adds, so
        a step that records its calls should be created with `attempts=0`."""
        self.latency_s += outcome.latency_s
        self.usage = self.usage + outcome.usage
        self.attempts += outcome.attempts
        return self


class Trace(BaseModel):
    """What a human reviewer needs to audit a result."""

    steps: list[TraceStep] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)

    def add(self, step: TraceStep) -> TraceStep:
        self.steps.append(step)
        return step

    def flag(self, reason: str) -> None:
        if reason not in self.flags:
            self.flags.append(reason)

    @property
    def total_latency_s(self) -> float:
        return sum(s.latency_s for s in self.steps)

    @property
    def usage(self) -> Usage:
        total = Usage()
        for step in self.steps:
            total = total + step.usage
        return total


class EvidenceItem(BaseModel):
    id: str
    text: str
    source: str
    url: str | None = None
    date: str | None = None
    tier: SourceTier = SourceTier.mainstream
    score: float | None = None


class GateVerdict(BaseModel):
    """The hate gate: a trained classifier's probability, the LLM's vote, and the decision."""

    hateful: bool
    score: float  # the classifier's probability that the post is hateful
    threshold: float
    sure: float = 1.01  # from this score on the LLM's "not hateful" flags the reply instead of vetoing it
    llm_hateful: bool | None = None  # None when the LLM was not asked
    reason: str = ""
    fallback: bool = False  # the language's own gate could not run; a simpler one scored the post


class CategoryVote(BaseModel):
    """What one component said about the category (probabilities sum to 1 over HateType)."""

    source: str  # "classifier", "memory", "llm", "combined"
    category: HateType
    probabilities: dict[HateType, float] = Field(default_factory=dict)


class Analysis(BaseModel):
    """Output of FIRE's Hate Speech Analyst (HEAL phase)."""

    is_hateful: bool
    target_group: str
    category: HateType
    reasoning: str
    search_query: str | None = None
    confidence: float | None = None  # the combined model's probability of `category`
    votes: list[CategoryVote] = Field(default_factory=list)
    gate: GateVerdict | None = None


class CheckResult(BaseModel):
    """One draft check's outcome (see rebuttal.fire.checks)."""

    name: str
    passed: bool
    detail: str = ""
    score: float | None = None  # a learned check's number (the draft score's chance of usable)


class Candidate(BaseModel):
    """A reply FIRE considered: the kept one and the others, for a reviewer one click away."""

    text: str
    origin: Literal["blocks", "free"]  # composed from vetted blocks, or written by the model
    passed: bool  # every check passed
    note: str = ""  # which blocks, or which checks failed
    chance: float | None = None  # the draft score's chance that a grader calls it usable


class Reply(BaseModel):
    """Output of FIRE's Counterspeech Generator (CARE phase)."""

    text: str
    strategy: str
    cited_evidence_ids: list[str] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)  # of the kept draft
    drafts: int = 1  # drafts written before this one was kept
    adapted_from: str | None = None  # memory record whose human reply this adapts
    origin: Literal["blocks", "free"] = "free"
    block_ids: list[str] = Field(default_factory=list)  # the vetted blocks a composed reply is made of
    chosen_because: str = ""
    candidates: list[Candidate] = Field(default_factory=list)  # every reply considered, the kept one first


class MemoryView(BaseModel):
    """What the memory told the analyst, kept for the trace."""

    scores: dict[HateType, float]
    predicted: HateType
    purity: float
    ambiguous: bool
    candidates: list[HateType]
    exemplar_ids: list[str] = Field(default_factory=list)


ResultStatus = Literal["ok", "flagged", "not_hateful", "error"]


class FireResult(BaseModel):
    id: str | None = None
    text: str
    system: str = "fire"
    status: ResultStatus
    message: str | None = None
    analysis: Analysis | None = None
    memory: MemoryView | None = None
    evidence: list[EvidenceItem] = Field(default_factory=list)
    reply: Reply | None = None
    trace: Trace = Field(default_factory=Trace)

    @field_validator("text", "id")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        return storable(value)


class SparTuple(BaseModel):
    target: str
    argument: str
    label: int = Field(ge=0, le=1, description="1 = hateful/harmful")
    group: str | None = None


class RoleView(BaseModel):
    """One role agent's view of a tuple under review (`spar-tagger+audit`)."""

    role: str
    holds: bool | None = Field(None, description="does the tuple hold from this role's perspective; "
                                                 "None: the role gave no verdict on it")
    label: int | None = Field(None, ge=0, le=1, description="the role's own label (1 = hateful)")
    group: str | None = None
    why: str = ""


class TupleReview(BaseModel):
    """What the auditor did with one tuple under review, and why (`spar-tagger+audit`)."""

    source: Literal["tagger", "roles"] = Field("tagger", description="the tagger's tuple, or one the roles "
                                                                      "added (an exact substring of the post)")
    proposed: SparTuple
    views: list[RoleView] = Field(default_factory=list)
    decision: Literal["kept", "relabelled", "dropped", "added"]
    final: SparTuple | None = Field(None, description="the tuple in the output; None when dropped")
    reason: str = Field("", description="the auditor's reason, from the roles' votes")


class SparResult(BaseModel):
    id: str | None = None
    text: str
    lang: Literal["en", "zh"]
    track: str
    system: str = "spar"
    status: ResultStatus = "ok"
    message: str | None = None
    tuples: list[SparTuple] = Field(default_factory=list)
    reviews: list[TupleReview] = Field(default_factory=list, description="spar-tagger+audit: per tuple, "
                                       "the roles' views and the auditor's decision")
    llm_calls: int = 0
    trace: Trace = Field(default_factory=Trace)

    @field_validator("text", "id")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        return storable(value)


MAX_POST_CHARS = 5000

# Free text from users, one rule everywhere (posts here, review edits and reasons in the server):
# a lone UTF-16 surrogate (JSON "\ud800", or an undecodable byte in a command-line argument) is
# refused, since no UTF-8 file or database can hold it; these invisible characters are removed:
# NUL, soft hyphen, zero-width space, word joiner and BOM (they carry no meaning and hide words
# from the hate gate), and the bidi embedding, override and isolate controls U+202A-202E and
# U+2066-2069 (they can show a reviewer text in another order than the one the model read:
# "Trojan Source"). Zero-width (non-)joiners and the bidi marks U+200E, U+200F, U+061C stay:
# scripts and emoji need them, and they cannot reorder text.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REMOVED_CHARS = "\x00\u00ad\u200b\u2060\ufeff\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_REMOVE = dict.fromkeys(map(ord, REMOVED_CHARS))


class InputError(ValueError):
    """Bad input from the user: reported as a flagged item, never a traceback."""


def lone_surrogate(text: str) -> tuple[int, str] | None:
    """(position, "U+D800") of the first lone surrogate in `text`, or None."""
    match = LONE_SURROGATE.search(text)
    return (match.start(), f"U+{ord(match.group()):04X}") if match else None


def clean_text(text: str, field: str = "text") -> str:
    """`text` without the removed characters; InputError naming `field` and the position
    (in the text as given) of a lone surrogate."""
    found = lone_surrogate(text)
    if found:
        raise InputError(f"{field} contains a lone surrogate ({found[1]}) at position {found[0]}")
    return text.translate(_REMOVE)


def storable(text: str | None) -> str | None:
    """`text` as a result may keep it: lone surrogates become U+FFFD and NUL is dropped, so an
    error result that echoes bad input can still be written as UTF-8 and stored."""
    if text is None:
        return None
    return LONE_SURROGATE.sub("\ufffd", text).replace("\x00", "")


def check_post(text: object, max_chars: int = MAX_POST_CHARS) -> str:
    """Return the post as clean text or raise InputError saying what is wrong."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"text is not valid UTF-8 (byte {exc.start})") from None
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    text = clean_text(text)
    if "\ufffd" in text:
        raise InputError("text contains undecodable bytes (U+FFFD); re-read it as UTF-8")
    text = text.strip()
    if not text:
        raise InputError("text is empty")
    if len(text) > max_chars:
        raise InputError(f"text has {len(text)} characters; the limit is {max_chars}")
    return text
