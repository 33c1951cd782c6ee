"""Reply blocks: the vetted, sourced counter-statements FIRE composes replies from.

The library is data (`fire/data/blocks-*.jsonl`, card in `fire/data/BLOCKS.md`): an NGO reads,
edits or replaces it without training anything. A block is matched to a post by MiniLM cosine
between the post (and each of its sentences: a long thread's claim sits in one of them) and the
plain-words claims the block `answers`, within the post's target group and category.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from rebuttal.fire.sentences import sentences
from rebuttal.types import HateType

ANY = "any"
FILES = ("blocks-facts.jsonl", "blocks-norms.jsonl", "blocks-zh.jsonl")
MAX_SENTENCES = 12  # of a long post, matched one by one besides the whole


class BlockSource(BaseModel):
    name: str
    year: str | None = None
    url: str | None = None


class Block(BaseModel):
    id: str
    kind: Literal["fact", "counterexample", "norm", "empathy"]
    categories: list[HateType] = Field(min_length=1)
    targets: list[str] = Field(min_length=1)
    answers: list[str] = Field(min_length=1)
    text: str = Field(min_length=10)
    source: BlockSource | None = None
    evidence_id: str | None = None
    fallback: bool = False  # the category's universal block: used when no block answers the claim
    language: Literal["en", "zh"] = "en"  # only English blocks are matched to claims (MiniLM reads English)

    @property
    def generic(self) -> bool:
        return ANY in self.targets

    @property
    def names_people(self) -> bool:
        """Its text names the post's people (`{people}`): it cannot serve a post that names nobody."""
        return "{people}" in self.text.lower()

    @property
    def unnamed_fallback(self) -> bool:
        """A generic fallback that names nobody: the category's reply when the post names no group."""
        return self.fallback and self.generic and not self.names_people

    def fits(self, target_group: str) -> bool:
        return self.generic or target_group in self.targets

    def render(self, people: str) -> str:
        """The text with the people's name put in (generic blocks say {people} / {People})."""
        return self.text.replace("{People}", people[:1].upper() + people[1:]).replace("{people}", people)


@dataclass(frozen=True)
class BlockMatch:
    block: Block
    similarity: float  # best cosine between the post (or one of its sentences) and an `answers` line
    answered: str  # that line


def read_blocks(paths: Sequence[Path] | None = None) -> list[Block]:
    """The shipped library, or the JSON-lines files given. A broken line names its file and line."""
    texts = ([(p.name, p.read_text(encoding="utf-8")) for p in map(Path, paths)] if paths else
             [(name, resources.files("rebuttal.fire").joinpath("data", name).read_text(encoding="utf-8"))
              for name in FILES])
    blocks: list[Block] = []
    for name, text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    blocks.append(Block.model_validate(json.loads(line)))
                except ValueError as exc:
                    raise ValueError(f"{name} line {number}: {str(exc)[:300]}") from None
    ids = [b.id for b in blocks]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate block ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    return blocks


class BlockLibrary:
    """`matches(post, target_group, category)`: the fitting blocks, best first. `encoder` is the
    MiniLM encoder the pipeline already holds; the answers are encoded once, at first use."""

    def __init__(self, blocks: Sequence[Block], encoder):
        self.blocks = list(blocks)
        self.encoder = encoder
        self._answer_vectors: np.ndarray | None = None
        self._owner = np.array([i for i, b in enumerate(self.blocks) for _ in b.answers], dtype=np.int64)

    @classmethod
    def load(cls, encoder, paths: Sequence[Path] | None = None) -> BlockLibrary:
        return cls(read_blocks(paths), encoder)

    def warm_up(self) -> None:
        self._answers()

    def _answers(self) -> np.ndarray:
        if self._answer_vectors is None:
            self._answer_vectors = self.encoder.encode([a for b in self.blocks for a in b.answers])
        return self._answer_vectors

    def post_vectors(self, post: str) -> np.ndarray:
        """The post's vector and, for a post of several sentences, each sentence's."""
        parts = sentences(post)[:MAX_SENTENCES]
        return self.encoder.encode([post, *parts] if len(parts) > 1 else [post])

    def matches(self, post: str, target_group: str, vectors: np.ndarray | None = None) -> list[BlockMatch]:
        """Blocks for the target group (or any group), best first; the caller weighs the category."""
        vectors = self.post_vectors(post) if vectors is None else vectors
        similarity = (self._answers() @ vectors.T).max(axis=1)  # per answer line
        best: dict[int, tuple[float, int]] = {}
        for line, (owner, score) in enumerate(zip(self._owner, similarity)):
            if owner not in best or score > best[owner][0]:
                best[owner] = (float(score), line)
        found = []
        for owner, (score, line) in best.items():
            block = self.blocks[owner]
            if block.fits(target_group) and block.language == "en":
                offset = line - int(np.searchsorted(self._owner, owner))
                found.append(BlockMatch(block, score, block.answers[offset]))
        return sorted(found, key=lambda m: -m.similarity)
