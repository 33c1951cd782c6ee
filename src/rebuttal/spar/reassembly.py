"""Phase 4: concatenate unit tuples per post (provenance kept), optional exact deduplication."""

from __future__ import annotations

from dataclasses import dataclass, field

from rebuttal.types import SparTuple


@dataclass
class Reassembled:
    tuples: list[SparTuple] = field(default_factory=list)
    provenance: list[list[str]] = field(default_factory=list)  # group ids behind each tuple
    duplicates_removed: int = 0


def reassemble(unit_tuples: list[tuple[str, list[SparTuple]]], *, dedup: bool = True) -> Reassembled:
    """`unit_tuples` = [(group_id, tuples), ...] in reading order. Concatenate first; with
    `dedup`, an exact repeat (all fields equal) is dropped and its unit added to the provenance."""
    out = Reassembled()
    seen: dict[tuple, int] = {}
    for group_id, tuples in unit_tuples:
        for t in tuples:
            key = (t.target, t.argument, t.label, t.group)
            if dedup and key in seen:
                out.provenance[seen[key]].append(group_id)
                out.duplicates_removed += 1
                continue
            seen[key] = len(out.tuples)
            out.tuples.append(t)
            out.provenance.append([group_id])
    return out
