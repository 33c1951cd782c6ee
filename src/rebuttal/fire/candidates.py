"""Candidates and a choice: replies composed from vetted blocks, the model's free draft, and the
draft score that ranks them (issue 46).

Block replies cost no model call, so they are made first: the blocks closest to the post's claim
and the category's fallback (compose_candidates). The closest block by cosine often rebuts a
neighbouring claim, so the draft score, which reads each reply with the post, ranks them; the
best one it passes (and every rule check passes) is kept and the model writes no draft. Else the
model drafts as before; its draft is kept when it passes every check, and the best-ranked block
stands in when it does not (flagged). Without a draft score no block is trusted unread: the model
drafts. Chosen on graded dev posts (benchmarks/results/fire_ranker.md). A Chinese post's block
reply is its category's Chinese fallback (compose_zh.py, unscored), never kept without a draft. A
slur never reaches a kept reply: without a block reply (blocks off, or a library with no block
for the post) the draft's slurs are replaced by the people they name, and the result is flagged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rebuttal.fire.blocks import BlockLibrary
from rebuttal.fire.checks import failures
from rebuttal.fire.compose import Composed, compose_candidates
from rebuttal.fire.generator import DraftJudge, review_chance
from rebuttal.fire.slurs import SLUR, name_the_people
from rebuttal.types import Analysis, Candidate, EvidenceItem, Reply, SourceTier, Trace, TraceStep


# The flags the choice raises (a redraft drops them with the reply they were about).
WEAK_BLOCK, SLUR_REPLACED = "reply_from_weak_block", "reply_slur_replaced"
CHOICE_FLAGS = (WEAK_BLOCK, SLUR_REPLACED)
# Blocks that answer the claim weighed by the reply ranker besides the category's fallback.
RIVALS = 3


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
    return Candidate(text=reply.text, origin=reply.origin, passed=not problems, note=note,
                     chance=review_chance(reply.checks))


@dataclass
class BlockReply:
    reply: Reply
    evidence: list[EvidenceItem]
    composed: Composed

    @property
    def chance(self) -> float:
        """The draft score's chance of usable (-1 when unscored: a Chinese post, no draft score)."""
        found = review_chance(self.reply.checks)
        return -1.0 if found is None else found


@dataclass
class ReplyChoice:
    """Which reply a post gets: the vetted blocks that answer its claim and the category's fallback
    are ranked by the draft score, which reads each with the post (learned.reply_pairs); the best
    one it passes is kept and the model writes no draft. Else the model drafts; its draft is kept
    when it passes every check, and the best-ranked block stands in when it does not (flagged)."""

    library: BlockLibrary | None  # None: blocks are off, or no encoder to match them
    judge: DraftJudge
    rivals: int = RIVALS

    def block_replies(self, post: str, analysis: Analysis, post_vector: np.ndarray | None,
                      trace: Trace) -> list[BlockReply]:
        """The post's block replies, each checked and scored, the draft score's favourite first."""
        started = time.perf_counter()
        step = trace.add(TraceStep(stage="blocks", attempts=0))
        made = compose_candidates(self.library, post, analysis.target_group, analysis.category, self.rivals)
        if not made:
            step.notes.append(f"no block in the library for {analysis.target_group}")
            return []
        reviews = self.judge.reviews(post, [m.text for m in made])
        replies = []
        for composed, review in zip(made, reviews):
            evidence = block_evidence(composed)
            checks = self.judge.judge(composed.text, post, evidence, [], post_vector, False) + review
            replies.append(BlockReply(Reply(text=composed.text, strategy=analysis.category.strategy, checks=checks,
                                            drafts=0, origin="blocks", block_ids=[composed.match.block.id],
                                            cited_evidence_ids=[e.id for e in evidence]), evidence, composed))
        replies.sort(key=lambda b: -b.chance)  # stable: unscored ones keep the match order
        step.notes += [f"{b.composed.why()}; draft score {b.chance:.2f}" for b in replies]
        step.notes.append(f"blocks for {made[0].group}; names the people: {made[0].people}")
        step.latency_s = round(time.perf_counter() - started, 3)  # matching, checks and the draft score's reads
        return replies

    def choose(self, post: str, analysis: Analysis, post_vector: np.ndarray | None, trace: Trace,
               free_draft: Callable[[], Reply | None]) -> tuple[Reply | None, list[EvidenceItem]]:
        """The kept reply (its candidates and the reason inside) and the block evidence it uses."""
        blocks = self.block_replies(post, analysis, post_vector, trace) if self.library is not None else []
        scored = [b for b in blocks if b.chance >= 0 and not failures(b.reply.checks)]
        if scored:
            best = scored[0]
            return _kept(best.reply, [b.reply for b in blocks if b is not best],
                         f"vetted block {best.composed.match.block.id}: the draft score passes it "
                         f"(chance {best.chance:.2f}) with the post; no draft written"), best.evidence
        free = free_draft()
        slurred = free is not None and SLUR.search(free.text) is not None
        if not blocks:
            if slurred:  # its failed slur check keeps it flagged; the slur itself goes
                free.text = name_the_people(free.text)[0]
                trace.flag(SLUR_REPLACED)
            return (_kept(free, [], "the model's draft (no block reply)") if free else None), []
        others = [b.reply for b in blocks]
        if free is not None and not slurred and not failures(free.checks):
            return _kept(free, others, "no vetted block passed the draft score and the model's draft passed "
                                       "every check"), []
        why = ("the model wrote no draft" if free is None else "the model's draft used a slur" if slurred
               else "the model's draft failed " + ", ".join(r.name for r in failures(free.checks)))
        best = next((b for b in blocks if not _rule_failures(b.reply.checks)), blocks[0])
        trace.flag(WEAK_BLOCK)  # no block passed the draft score
        rest = [r for r in others if r is not best.reply] + ([free] if free else [])
        return _kept(best.reply, rest, f"{why}; the best-ranked vetted block stands in "
                                       f"({best.composed.match.block.id})"), best.evidence


def _rule_failures(checks) -> list:
    """The failed checks other than the draft score's."""
    return [c for c in failures(checks) if c.name not in ("review_score", "review_fallback")]


def _kept(reply: Reply, others: list[Reply], because: str) -> Reply:
    reply.chosen_because = because
    reply.candidates = [candidate(r) for r in (reply, *others)]
    return reply
