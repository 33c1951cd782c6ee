"""Labelled hate / not-hate texts for training the gate, read from the files as published.

Every loader takes the data folder laid out as `../shared/data` (see its README) and returns
`LabelledText` rows; a missing file raises FileNotFoundError naming it.
"""

from __future__ import annotations

import csv
import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from rebuttal.learned.rejections import GATE_ROWS, rejection_texts

csv.field_size_limit(10**7)


@dataclass(frozen=True)
class LabelledText:
    text: str
    hateful: bool
    source: str
    group: str = ""  # rows sharing a group (a HateCheck template) stay in one fold


def _clean(text: str) -> str:
    return " ".join(str(text).replace('""', '"').strip(' "').split())


def implicit_hate(root: Path) -> list[LabelledText]:
    with open(root / "hate-sources" / "implicit_hate_v1_stg1_posts.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [LabelledText(_clean(r["post"]), r["class"] != "not_hate", "implicit-hate") for r in rows if r["post"]]


def ethos(root: Path) -> list[LabelledText]:
    with open(root / "hate-sources" / "Ethos_Dataset_Binary.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter=";"))
    return [LabelledText(_clean(r["comment"]), float(r["isHate"]) >= 0.5, "ethos") for r in rows if r["comment"]]


def gab(root: Path) -> list[LabelledText]:
    with open(root / "hate-sources" / "ghc_train.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [LabelledText(_clean(r["text"]), r["hd"] == "1" or r["cv"] == "1", "gab") for r in rows if r["text"]]


def counterspeech(root: Path) -> list[LabelledText]:
    """Human counter-speech replies: they name groups and quote hate in order to reject it,
    which is exactly what a gate must let through."""
    texts: set[str] = set()
    for path in sorted((root / "counterspeech-sources").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                texts.add(_clean(json.loads(line).get("counterspeech") or ""))
    return [LabelledText(t, False, "counterspeech") for t in sorted(texts) if t]


def silver_posts(paths: list[Path]) -> list[LabelledText]:
    rows = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                rows.append(LabelledText(_clean(item["hate_speech"]), bool(item.get("is_hateful", True)), "silver"))
    return rows


def state_toxicn(root: Path) -> list[LabelledText]:
    items = json.loads((root / "state-toxicn" / "train.json").read_text(encoding="utf-8"))
    return [LabelledText(_clean(r["content"]), str(r["sen_hate"]) == "1", "state-toxicn", group=f"post:{r['id']}")
            for r in items]


def state_toxicn_rejections(root: Path, limit: int | None = None) -> list[LabelledText]:
    """Rule-made rejections of hateful STATE-ToxiCN claims (rejections.py), non-hateful; each in
    the group of the post its claim came from."""
    return [LabelledText(text, False, "state-toxicn-rejections", group=f"post:{post}")
            for post, text in rejection_texts(root, limit)]


def hatecheck(root: Path, lang: str) -> list[LabelledText]:
    path = root / f"hatecheck-{lang}" / "dev.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [LabelledText(_clean(r["test_case"]), r["label_gold"] == "hateful", f"hatecheck:{r['functionality']}",
                         group=f"{r['functionality']}:{r['templ_id']}") for r in rows]


def gate_corpus(root: Path, lang: str, per_source: int = 6000, seed: int = 13,
                whole: tuple[str, ...] = ()) -> list[LabelledText]:
    """Everything we hold for one language, at most `per_source` rows of each source and label
    (a fixed-seed sample: the Gab and implicit-hate negatives would otherwise drown the rest and
    take most of the encoding time) except the sources in `whole`, kept entire. HateCheck is not
    included: callers add its dev half. Chinese adds rule-made rejections of STATE-ToxiCN's hateful
    claims (rejections.py) as non-hateful rows: we hold no Chinese counter-speech."""
    if lang == "zh":
        rows = state_toxicn(root) + state_toxicn_rejections(root, GATE_ROWS)
    else:
        silver = sorted((root / "factualcs-silver").glob("train*.jsonl"))
        rows = implicit_hate(root) + ethos(root) + gab(root) + counterspeech(root) + silver_posts(silver)
    groups: dict[tuple[str, bool], list[LabelledText]] = defaultdict(list)
    for row in rows:
        groups[(row.source, row.hateful)].append(row)
    rng = random.Random(seed)
    return [row for key in sorted(groups) for row in
            (groups[key] if len(groups[key]) <= per_source or key[0] in whole else rng.sample(groups[key], per_source))]
