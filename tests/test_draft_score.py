"""FIRE's learned draft score: the head, its training, the shipped weights and the flag it raises."""

import json
from pathlib import Path

import numpy as np
import pytest
from fakes import ScriptedChatModel, WordEncoder

from rebuttal.fire import FirePipeline, settings_for
from rebuttal.fire.generator import DraftJudge
from rebuttal.learned.draft_score import DraftScore, graded_replies, keep_cut, train_draft_score
from rebuttal.learned.linear import LinearHead

GRADES = Path(__file__).resolve().parents[1] / "benchmarks" / "grades"


def word_score(word: str, cut: float = 0.5) -> DraftScore:
    """A draft score on WordEncoder vectors: a reply is usable iff it contains `word`."""
    vector = WordEncoder().encode([word])[0]
    head = LinearHead(coef=np.array([100.0 * vector]), intercept=np.array([-20.0]),
                      classes=["not_usable", "usable"], meta={"threshold": cut})
    return DraftScore(head)


def test_review_flags_a_low_score_and_passes_a_high_one():
    judge = DraftJudge(WordEncoder(), word_score("census"))
    low = judge.review("Migrants are good people.", "Migrants are lazy")
    high = judge.review("The census shows migrants work", "Migrants are lazy")
    assert low.name == "review_score" and not low.passed and "read it closely" in low.detail
    assert high.passed and "(cut 0.50)" in high.detail
    assert judge.review("移民很好", "移民都是懒汉") is None  # trained on English replies only
    assert DraftJudge(None, word_score("census")).review("x", "Migrants are lazy") is None  # needs vectors


def test_keep_cut_passes_the_asked_share_of_usable_replies():
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9])
    usable = np.array([False, False, True, False, True, True, True, False])
    cut = keep_cut(scores, usable, 0.75)
    assert cut == pytest.approx(0.6) and (scores[usable] >= cut).mean() == 0.75


def test_training_learns_concrete_from_vague_and_writes_a_card(tmp_path):
    concrete = [f"In {1990 + i} the census counted {i + 3} million migrants working in care homes." for i in range(30)]
    vague = [f"Migrants are nice people and everyone should be kind number {i}." for i in range(30)]
    replies = [{"key": f"k{i}", "system": "fire", "item": f"p{i % 20}", "reply": t} for i, t in enumerate(concrete + vague)]
    grades = [{"key": f"k{i}", "verdict": "usable" if i < 30 else "fixable", "why": ""} for i in range(60)]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    (tmp_path / "g.jsonl").write_text("".join(json.dumps(g) + "\n" for g in grades[:-1]))  # one ungraded
    score = train_draft_score(tmp_path / "r.jsonl", tmp_path / "g.jsonl", tmp_path / "out", folds=5)
    meta = score.head.meta
    assert meta["replies"] == 59 and meta["usable"] == 30 and meta["out_of_fold_auc"] > 0.9
    loaded = DraftScore.load(tmp_path / "out" / "draft_score.npz")
    assert loaded.threshold == pytest.approx(meta["threshold"])
    card = (tmp_path / "out" / "draft_score_card.md").read_text()
    assert "59 replies (30 graded usable)" in card and "Licence" in card


def test_the_shipped_score_separates_the_graded_dev_replies():
    """In-sample on what it was trained on, so a floor, not a measurement (see the model card)."""
    from sklearn.metrics import roc_auc_score

    from rebuttal.llm.embeddings import load_minilm

    score = DraftScore.load()
    rows = graded_replies(GRADES / "fire-dev-replies.jsonl", GRADES / "fire-dev-independent.jsonl")
    chance = score.usable(load_minilm().encode([r["reply"] for r in rows]))
    assert len(rows) >= 150 and 0.0 < score.threshold < 1.0
    assert roc_auc_score([r["verdict"] == "usable" for r in rows], chance) > 0.85


def test_a_draft_below_the_cut_keeps_its_text_and_is_flagged():
    from test_fire import ListSearcher, analysis

    reply = {"claim": "the claim", "reply": "Immigrants are people, and everyone deserves respect."}
    model = ScriptedChatModel([analysis("nonfactual", query=None), reply])
    fire = FirePipeline(model, None, ListSearcher(), settings_for(("no-memory",)), encoder=WordEncoder(),
                        draft_score=word_score("census"))
    result = fire.respond("Immigrants are disgusting")
    assert result.reply.text == reply["reply"] and result.reply.drafts == 1  # no redraft for the score
    assert result.status == "flagged" and result.trace.flags == ["draft_review_score"]
    assert [c.name for c in result.reply.checks if not c.passed] == ["review_score"]
