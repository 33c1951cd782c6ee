"""Candidates and a choice: a reply composed from vetted blocks, the model's free draft, and the
rule that keeps one (issue 46).

The block reply costs no model call, so it is made first; when a block answers the post's claim
closely enough (`ReplyChoice.min_score`) it is kept and the model writes no draft. Else the model
drafts as before; its draft is kept when it passes every check, and the block reply stands in
when it does not (flagged). Chosen on graded dev posts (benchmarks/results/fire_blocks.md): below
the cut, block replies were usable for 70 posts whose flagged draft was not, the reverse for 23.
A Chinese post's block reply is its category's Chinese fallback (compose_zh.py), never kept
without a draft. A slur never reaches a kept reply: without a block reply (blocks off, or a
library with no block for the post) the draft's slurs are replaced by the people they name, and
the result is flagged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rebuttal.fire.blocks import BlockLibrary
from rebuttal.fire.checks import failures
from rebuttal.fire.compose import Composed, compose
from rebuttal.fire.generator import DraftJudge
from rebuttal.fire.slurs import SLUR, name_the_people
from rebuttal.types import Analysis, Candidate, EvidenceItem, Reply, SourceTier, Trace, TraceStep


# The flags the choice raises (a redraft drops them with the reply they were about).
WEAK_BLOCK, SLUR_REPLACED = "reply_from_weak_block", "reply_slur_replaced"
CHOICE_FLAGS = (WEAK_BLOCK, SLUR_REPLACED)


def block_evidence(composed: Composed) -> list[EvidenceItem]:
    """A sourced block as an evidence item: the composed reply cites only it."""
    block = composed.match.block
    if block.source is None:
        return []
    return [EvidenceItem(id=block.id, text=composed.text, source=block.source.name, url=block.source.url,
                         date=block.source.year, tier=SourceTier.institutional)]


def candidate(reply: Reply) -> Candidate:
    problems = failures(reply.checks)
    note = (", ".join(reply.block_ids) if reply.origin == "blocks" else "")
    if problems:
        note = (note + "; " if note else "") + "failed " + ", ".join(r.name for r in problems)
    return Candidate(text=reply.text, origin=reply.origin, passed=not problems, note=note)


@dataclass
class ReplyChoice:
    """`min_score`: the block match (cosine + category bonus) from which a block reply written for
    the target group is kept without asking the model."""

    library: BlockLibrary | None  # None: blocks are off, or no encoder to match them
    judge: DraftJudge
    min_score: float

    def block_reply(self, post: str, analysis: Analysis, post_vector: np.ndarray | None,
                    trace: Trace) -> tuple[Reply, list[EvidenceItem], Composed] | None:
        step = trace.add(TraceStep(stage="blocks", attempts=0))
        composed = compose(self.library, post, analysis.target_group, analysis.category)
        if composed is None:
            step.notes.append(f"no block in the library for {analysis.target_group}")
            return None
        evidence = block_evidence(composed)
        checks = self.judge.judge(composed.text, post, evidence, [], post_vector, False)
        step.notes += [composed.why(), f"blocks for {composed.group}; names the people: {composed.people}"]
        reply = Reply(text=composed.text, strategy=analysis.category.strategy, checks=checks, drafts=0,
                      origin="blocks", block_ids=[composed.match.block.id], cited_evidence_ids=[e.id for e in evidence])
        return reply, evidence, composed

    def choose(self, post: str, analysis: Analysis, post_vector: np.ndarray | None, trace: Trace,
               free_draft: Callable[[], Reply | None]) -> tuple[Reply | None, list[EvidenceItem]]:
        """The kept reply (its candidates and the reason inside) and the block evidence it uses."""
        made = None
        if self.library is not None:
            made = self.block_reply(post, analysis, post_vector, trace)
        if made is not None:
            block, evidence, composed = made
            if composed.answers and composed.score >= self.min_score and not failures(block.checks):
                return _kept(block, [], f"a vetted block answers the claim (score {composed.score:.2f} >= "
                                        f"{self.min_score:.2f}); no draft written"), evidence
        free = free_draft()
        slurred = free is not None and SLUR.search(free.text) is not None
        if made is None:
            if slurred:  # its failed slur check keeps it flagged; the slur itself goes
                free.text = name_the_people(free.text)[0]
                trace.flag(SLUR_REPLACED)
            return (_kept(free, [], "the model's draft (no block reply)") if free else None), []
        if free is not None and not slurred and not failures(free.checks):
            return _kept(free, [block], f"no block answers the claim closely enough (best score "
                                        f"{composed.score:.2f} < {self.min_score:.2f}) and the model's draft "
                                        "passed every check"), []
        why = ("the model wrote no draft" if free is None else "the model's draft used a slur" if slurred
               else "the model's draft failed " + ", ".join(r.name for r in failures(free.checks)))
        trace.flag(WEAK_BLOCK)  # the block answers the claim less closely than the cut asks
        return _kept(block, [free] if free else [], f"{why}; the closest vetted block stands in "
                                                    f"(score {composed.score:.2f})"), evidence


def _kept(reply: Reply, others: list[Reply], because: str) -> Reply:
    reply.chosen_because = because
    reply.candidates = [candidate(r) for r in (reply, *others)]
    return reply
