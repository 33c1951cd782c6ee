"""SPAR-Hate's vocabulary: tracks, the implicit-target markers, hate groups and labels.

Plain values only (no imports from rebuttal), used by the gold loaders (`data.gold`), the
pipeline and the scorers alike.
"""

from __future__ import annotations

from enum import StrEnum


class Track(StrEnum):
    """A benchmark track: its language and whether tuples carry a hate group (four fields)."""

    en_main = "en-main"  # TBO-style English, (target, argument, harmful)
    zh_main = "zh-main"  # STATE-ToxiCN, three fields
    zh_quad = "zh-quad"  # STATE-ToxiCN, four fields: + group

    @property
    def lang(self) -> str:
        return "en" if self is Track.en_main else "zh"

    @property
    def has_group(self) -> bool:
        return self is Track.zh_quad

    @classmethod
    def default_for(cls, lang: str) -> Track:
        return cls.en_main if lang == "en" else cls.zh_main


TRACKS = tuple(t.value for t in Track)
IMPLICIT_TARGET = "IMPLICIT_TARGET"  # how the segmenter and roles mark a unit without a target
OUTPUT_IMPLICIT = "NULL"  # how both benchmarks (and our outputs) write an implicit target
NON_HATE = "non-hate"
ZH_GROUPS = ("Racism", "Region", "LGBTQ", "Sexism", "others", NON_HATE)
_POSITIVE = {"1", "yes", "true", "hate", "hateful", "harmful", "y"}
_NEGATIVE = {"0", "no", "false", "non-hate", "not-hate", "nonhate", "harmless", "n", "null", "none", ""}


def default_track(lang: str) -> str:
    return Track.default_for(lang).value


def parse_label(value: object) -> int:
    """1/0 from the many spellings datasets and models use (YES/NO, hate/non-hate, true...)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    text = str(value).strip().lower() if value is not None else ""
    if text in _POSITIVE:
        return 1
    if text in _NEGATIVE:
        return 0
    raise ValueError(f"not a hateful/harmful label: {value!r}")


def normalize_group(value: object) -> str:
    """STATE-ToxiCN groups as written ("Sexism, Racism"), with stray spaces removed."""
    parts = [p.strip() for p in str(value or "").split(",") if p.strip()]
    return ", ".join(parts) if parts else NON_HATE


def group_valid(group: str | None) -> bool:
    """Every part of the group is one of the STATE-ToxiCN groups."""
    return all(p.strip() in ZH_GROUPS for p in normalize_group(group).split(","))
