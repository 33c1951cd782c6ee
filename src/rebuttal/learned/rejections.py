"""Chinese texts that quote or name a hateful claim in order to reject it: non-hateful rows for
the Chinese gate.

The English gate learns that quoting hate to reject it is not hate from human counter-speech
(CONAN, CrowdCounter); we hold no Chinese counter-speech, and the Chinese gate called 58% of
Multilingual HateCheck's "counter-speech referencing hate" cases hateful. Each row here puts
the (target, argument) claim of one hateful STATE-ToxiCN train post inside a frame that
rejects it. The frames were written for this (not taken from HateCheck); quoting frames use
quotation marks, referring ones do not.
"""

from __future__ import annotations

import random
from pathlib import Path

from rebuttal.data.gold import load_state_toxicn
from rebuttal.data.vocab import OUTPUT_IMPLICIT

QUOTING = (
    "“{claim}”这种话就是赤裸裸的歧视。", "看到有人写“{claim}”，我只觉得可悲。", "请不要再转发“{claim}”这样的言论了。",
    "说“{claim}”的人根本不了解他们。", "“{claim}”？这是偏见，不是事实。", "我举报了那条说“{claim}”的评论。",
    "凭什么说“{claim}”？拿出证据来。", "把“{claim}”挂在嘴边的人应该好好反思。", "评论区有人说“{claim}”，这太过分了。",
    "“{claim}”——这种说法我坚决反对。",
)
REFERRING = (
    "说{claim}是错误的，也很伤人。", "我不同意有人说{claim}。", "认为{claim}，这只是刻板印象。",
    "那些声称{claim}的人是在散布偏见。", "有人觉得{claim}，可事实根本不是这样。", "别再说{claim}了，这种话伤害了很多人。",
)
MAX_CLAIM_CHARS = 30  # longer spans read as a second post inside the frame
# How many go into the gate's training. Template-held-out HateCheck zh FPR at 90% recall: none
# 0.245, 1,200 0.196, all 3,874 0.191 (benchmarks/results/gate_zh.md; on 2026-12-04 before implicit
# targets were left out of the claims: 0.189 and 0.191; 2,400: 0.192 in a scratch run).
GATE_ROWS = 1200


def hateful_claims(root: Path) -> list[tuple[str, str]]:
    """(post id, claim): the first hateful (target, argument) claim of each hateful STATE-ToxiCN
    train post, as one string: the argument alone when the target is implicit (`NULL`) or the
    argument already starts with it."""
    claims = []
    for post in load_state_toxicn(root / "state-toxicn" / "train.json"):
        if str(post.meta.get("sen_hate")) != "1":
            continue
        first = next((t for t in post.tuples if t.label == 1 and t.target and t.argument), None)
        if first is None:
            continue
        implicit = first.target == OUTPUT_IMPLICIT or first.argument.startswith(first.target)
        claim = first.argument if implicit else first.target + first.argument
        if len(claim) <= MAX_CLAIM_CHARS:
            claims.append((post.id, claim))
    return claims


def rejection_texts(root: Path, limit: int | None = None, seed: int = 28) -> list[tuple[str, str]]:
    """(post id, text): one framed rejection per claim (shuffled with a fixed seed, at most
    `limit`), quoting and referring frames in turn."""
    rng = random.Random(seed)
    claims = hateful_claims(root)
    rng.shuffle(claims)
    return [(post, rng.choice(QUOTING if i % 2 == 0 else REFERRING).format(claim=claim))
            for i, (post, claim) in enumerate(claims[:limit])]
