"""Rule-made non-hateful Chinese rows that contrast with hate (tried for the Chinese gate on
2026-12-04, not shipped: benchmarks/results/gate_zh.md). Two kinds:

- other targets: a hateful STATE-ToxiCN claim with a protected target, the target swapped for a
  group defined by what it does (fraudsters, litterers), whose abuse is not hate speech; claims
  whose argument names a group or a lexicon term are skipped, so no slur stays behind;
- mentions: protected groups in negated-negative or positive sentences.

The frames and the swap groups were written for this, not taken from HateCheck.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from rebuttal.data.gold import load_state_toxicn

PROTECTED = ("黑人", "同性恋", "女人", "河南人", "东北人", "女性", "上海人", "男人", "外国人", "非洲人", "白人",
             "中国男人", "中国女人", "中国女性", "女生", "男性", "南方人", "安徽人", "广东人", "外地人", "男同",
             "女同", "穆斯林", "残疾人", "跨性别者", "农村人", "北方人", "四川人", "新疆人", "日本人", "韩国人", "犹太人")
BY_CONDUCT = ("骗子", "贪官", "插队的人", "酒驾司机", "网络喷子", "黑心商家", "二手车贩子", "房产中介", "电信诈骗犯",
              "偷电动车的", "乱扔垃圾的人", "高空抛物的人", "闯红灯的人", "放高利贷的", "传销头目", "键盘侠", "抄袭的作者",
              "收智商税的网红", "学术造假的教授", "拖欠工资的老板")
NEGATED = ("{t}并不比任何人低一等。", "谁说{t}就懒？我认识的{t}都很勤快。", "{t}没有你想象中那么糟。",
           "我从来不觉得{t}有什么可恨的。", "{t}不是社会的负担。", "{t}一点都不危险。", "{t}并不欠谁一个解释。",
           "没有任何证据表明{t}更爱犯罪。", "{t}的智商和别人没有区别。", "{t}也不是天生就该被看不起的。")
POSITIVE = ("我身边的{t}朋友都很好相处。", "很多{t}在自己的岗位上做得非常出色。", "我很敬佩那些努力生活的{t}。",
            "和{t}同事一起工作很愉快。", "{t}也是我们社会的一份子，理应被尊重。", "今天认识了几个{t}，聊得很开心。",
            "{t}为这个城市做了很多贡献。", "我支持{t}争取平等的权利。")


def other_target_rows(root: Path, seed: int = 30) -> list[tuple[str, str]]:
    """(post id, text): one swapped claim per hateful STATE-ToxiCN train post that has one."""
    lexicon = json.loads((root / "state-toxicn" / "lexicon.json").read_text(encoding="utf-8"))
    terms = [r["term"] for r in lexicon["terms"] if len(r["term"]) >= 2]
    rng = random.Random(seed)
    rows = []
    for post in load_state_toxicn(root / "state-toxicn" / "train.json"):
        if str(post.meta.get("sen_hate")) != "1":
            continue
        for claim in post.tuples:
            arg = claim.argument
            if claim.label != 1 or claim.target not in PROTECTED or not arg or len(arg) > 30:
                continue
            if "黑" in arg or any(word in arg for word in (*PROTECTED, *terms)):
                continue
            rows.append((post.id, rng.choice(BY_CONDUCT) + arg))
            break
    return rows


def mention_rows(seed: int = 31) -> list[str]:
    """Four negated and two positive sentences for each protected group."""
    rng = random.Random(seed)
    return [frame.format(t=group) for group in PROTECTED
            for frame in rng.sample(NEGATED, 4) + rng.sample(POSITIVE, 2)]
