"""Pydantic schemas the SPAR-Hate agents must answer with (sent as JSON schema to the backend)."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from rebuttal.data.vocab import IMPLICIT_TARGET, Track, parse_label


class SegmentUnit(BaseModel):
    local_group_id: int = Field(description="1, 2, ... in reading order")
    group_text: str = Field(description="the unit copied exactly from the post")
    canonical_target: str = Field(description=f"the entity mention attacked, or {IMPLICIT_TARGET}")


class Segmentation(BaseModel):
    units: list[SegmentUnit]


class RoleTuple(BaseModel):
    rationale: str = Field(description="one line, under 30 words")
    target: str
    argument: str = Field(description="shortest decisive exact substring inside <focus>")
    harmful: int = Field(description="1 harmful/hateful, 0 not")

    @field_validator("harmful", mode="before")
    @classmethod
    def _label(cls, value: object) -> int:
        return parse_label(value)


class RoleTupleQuad(RoleTuple):
    group: str = Field(description="Racism, Region, LGBTQ, Sexism, others or non-hate")


class RoleOutput(BaseModel):
    tuples: list[RoleTuple] = Field(min_length=1)


class RoleOutputQuad(BaseModel):
    tuples: list[RoleTupleQuad] = Field(min_length=1)


class ArbiterDecision(BaseModel):
    chosen: int = Field(description="number of the cluster that is right")
    argument: str = Field(default="", description="a tighter argument span, or empty")
    corrections: list[str] = Field(default_factory=list, description='e.g. "moderator: downweighted"')
    rationale: str = ""


class TupleVerdict(BaseModel):
    number: int = Field(description="the number of the tagger tuple")
    holds: bool = Field(description="true if the tuple holds from your role's perspective")
    harmful: int = Field(description="your own label: 1 harmful/hateful, 0 not")
    why: str = Field(default="", description="one line, under 30 words")

    @field_validator("harmful", mode="before")
    @classmethod
    def _label(cls, value: object) -> int:
        return parse_label(value)


class TupleVerdictQuad(TupleVerdict):
    group: str = Field(default="", description="Racism, Region, LGBTQ, Sexism, others or non-hate")


class ReviewOutput(BaseModel):
    verdicts: list[TupleVerdict] = Field(min_length=1)
    missed: list[RoleTuple] = Field(default_factory=list, description="tuples the tagger missed (exact spans)")


class ReviewOutputQuad(BaseModel):
    verdicts: list[TupleVerdictQuad] = Field(min_length=1)
    missed: list[RoleTupleQuad] = Field(default_factory=list, description="tuples the tagger missed (exact spans)")


def role_schema(track: str) -> type[BaseModel]:
    return RoleOutputQuad if Track(track).has_group else RoleOutput


def review_schema(track: str) -> type[BaseModel]:
    return ReviewOutputQuad if Track(track).has_group else ReviewOutput
