"""A reply for a Chinese post from the Chinese blocks: the category's fallback, the people named
neutrally. The library's matching encoder (MiniLM) reads English only, so a Chinese block is never
matched to a claim: it is the universal norm of the post's category, kept only when the model's
own draft fails a check (a slur, an order the post smuggled in, a concession), and always flagged.
Without it a Chinese draft that followed an injected order had nothing to stand in for it
(benchmarks/results/fire_injection.md).
"""

from __future__ import annotations

import re

from rebuttal.fire.blocks import Block, BlockLibrary
from rebuttal.types import HateType

# Words of a Chinese post that name the people, with their neutral name (slurs included: the
# reply names the people, never the slur).
NAMED_ZH = [
    (r"外地人|外地佬", "外地人"),
    (r"黑人|黑鬼|黑皮|黑蛆|尼哥", "黑人"),
    (r"跨性别|人妖", "跨性别者"),
    (r"同性恋|基佬|同志|gay|拉拉|蕾丝", "同性恋者"),
    (r"穆斯林|绿绿|回民|伊斯兰", "穆斯林"),
    (r"犹太", "犹太人"),
    (r"女权|女拳|田园女", "女权主义者"),
    (r"女性|女人|女的|婊|母狗|娘们", "女性"),
    (r"残疾|残障|智障|弱智", "残障人士"),
    (r"农村人|乡下人|农民工", "农村人"),
    (r"河南人|东北人|上海人|广东人|新疆人|四川人", None),  # a region's people: the post's own word
    (r"移民|难民", "移民"),
]
GROUP_ZH = {
    "Women": "女性", "Men": "男性", "LGBT+": "性少数群体", "Muslims": "穆斯林", "Jews": "犹太人",
    "Immigrants": "移民", "People of color": "有色人种", "Black people": "黑人", "Disabled": "残障人士",
    "Other religions": "其他宗教的信徒",
}
UNNAMED_ZH = "你说的这些人"


def people_zh(target_group: str, post: str) -> str:
    """The neutral Chinese name of the people `post` attacks: the post's words first, then the
    analyst's label."""
    for pattern, name in NAMED_ZH:
        if found := re.search(pattern, post, re.IGNORECASE):
            return name or found.group(0)
    return GROUP_ZH.get(target_group, UNNAMED_ZH)


def fallback_zh(library: BlockLibrary, category: HateType) -> Block | None:
    """The Chinese fallback block of `category`, or None when the library has none."""
    return next((b for b in library.blocks if b.language == "zh" and b.fallback and category in b.categories), None)
