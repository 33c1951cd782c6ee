"""FIRE's learned draft score: the head, its training, the shipped weights and the flag it raises."""

import json
from pathlib import Path

import numpy as np
import pytest
from fakes import ScriptedChatModel, WordEncoder

from rebuttal.fire import FirePipeline, settings_for
from rebuttal.fire.generator import DraftJudge
from rebuttal.learned.draft_score import DraftScore, graded_replies, usable_chance
from rebuttal.learned.train_draft import keep_cut, train_draft_score
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
    low, = judge.review("Migrants are good people.", "Migrants are lazy")
    high, = judge.review("The census shows migrants work", "Migrants are lazy")
    assert low.name == "review_score" and not low.passed and "read it closely" in low.detail
    assert high.passed and "(cut 0.50)" in high.detail
    assert judge.review("移民很好", "移民都是懒汉") == []  # trained on English replies only
    assert DraftJudge(None, word_score("census")).review("x", "Migrants are lazy") == []  # needs vectors


def states_score(reader_model: str = "no-such-model") -> DraftScore:
    """A states head that reads MarkerReader's "vile" dimension, with word_score("census") as fallback."""
    coef = np.zeros((1, 16))
    coef[0, 8] = -40.0  # the last word's state says "vile": not usable
    head = LinearHead(coef=coef, intercept=np.array([20.0]), classes=["not_usable", "usable"],
                      meta={"threshold": 0.5, "states": {"model": reader_model, "layers": 3, "max_tokens": 8}})
    return DraftScore(head, word_score("census").head)


def test_the_states_head_reads_the_chat_model_and_its_fallback_is_flagged(monkeypatch):
    import rebuttal.learned.gate as gate_module
    from test_learned import MarkerReader

    missing = DraftJudge(WordEncoder(), states_score())  # "no-such-model" is not installed
    scored, fallback = missing.review("The census shows migrants work", "Migrants are lazy")
    assert scored.passed and not fallback.passed and fallback.name == "review_fallback"
    monkeypatch.setattr(gate_module, "shared_reader", lambda **spec: MarkerReader())
    judge = DraftJudge(WordEncoder(), states_score())
    good, = judge.review("The census shows migrants work", "Migrants are lazy")
    bad, = judge.review("The census shows migrants are vile", "Migrants are lazy")
    assert good.passed and not bad.passed  # the fallback (census) would have passed both


def topic_rows(tmp_path, n: int = 60) -> dict[str, str]:
    """Posts on crime or on jobs, each with a reply on its own topic (usable) and one on the other
    (unusable): the same reply texts are usable under one post and not under the next, so only a
    score that reads the post can separate them. Writes r.jsonl and g.jsonl; returns the posts."""
    topics = {"crime": "crime statistics show immigrants offend less", "jobs": "employment data show immigrants work"}
    posts, replies, grades = {}, [], []
    for i in range(n):
        topic = ("crime", "jobs")[i % 2]
        posts[f"p{i}"] = f"immigrants bring {topic} problems {i}"
        for j, (other, text) in enumerate(topics.items()):
            key = f"k{i}-{j}"
            replies.append({"key": key, "system": "fire-blocks", "item": f"p{i}", "reply": text})
            grades.append({"key": key, "verdict": "usable" if other == topic else "unusable", "why": ""})
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    (tmp_path / "g.jsonl").write_text("".join(json.dumps(g) + "\n" for g in grades))
    return posts


def test_a_score_that_reads_the_post_ranks_the_same_reply_by_the_post_it_answers(tmp_path):
    from rebuttal.llm.embeddings import load_minilm

    posts = topic_rows(tmp_path)
    score = train_draft_score(tmp_path / "r.jsonl", tmp_path / "g.jsonl", tmp_path / "out", posts=posts, folds=5,
                              states=None)
    assert score.reads_post and score.head.meta["out_of_fold_auc"] > 0.9
    loaded = DraftScore.load(tmp_path / "out" / "draft_score.npz")
    crime, jobs = (loaded.reviews(f"immigrants bring {t} problems 999", ["crime statistics show immigrants offend less",
                                                                       "employment data show immigrants work"],
                                  load_minilm()) for t in ("crime", "jobs"))
    assert crime[0].chance > crime[1].chance and jobs[1].chance > jobs[0].chance
    alone = train_draft_score(tmp_path / "r.jsonl", tmp_path / "g.jsonl", tmp_path / "alone", folds=5, states=None)
    assert not alone.reads_post and alone.head.meta["out_of_fold_auc"] < 0.6  # the reply alone cannot tell
    assert "with the post it answers" in (tmp_path / "out" / "draft_score_card.md").read_text()


def test_a_states_pair_score_reads_the_post_and_the_reply_as_one_text(tmp_path, monkeypatch):
    import rebuttal.learned.gate as gate_module
    from test_learned import MarkerReader

    monkeypatch.setenv("REBUTTAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(gate_module, "shared_reader", lambda **spec: MarkerReader())
    posts = topic_rows(tmp_path)
    spec = {"model": "m", "layers": 3, "max_tokens": 64}
    score = train_draft_score(tmp_path / "r.jsonl", tmp_path / "g.jsonl", tmp_path / "out", posts=posts, folds=5,
                              states=spec)
    assert score.head.meta["pair"] and score.fallback.meta["pair"] and "read together" in score.head.meta["reads"]
    assert list((tmp_path / "cache" / "draft-pairs").iterdir())  # cached by the text the reader read


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
    score = train_draft_score(tmp_path / "r.jsonl", tmp_path / "g.jsonl", tmp_path / "out", folds=5, states=None)
    meta = score.head.meta
    assert meta["replies"] == 59 and meta["usable"] == 30 and meta["out_of_fold_auc"] > 0.9
    loaded = DraftScore.load(tmp_path / "out" / "draft_score.npz")
    assert loaded.threshold == pytest.approx(meta["threshold"]) and loaded.fallback is None
    card = (tmp_path / "out" / "draft_score_card.md").read_text()
    assert "59 replies (30 graded usable)" in card and "Licence" in card and "Fallback head" not in card


def test_training_on_states_keeps_the_minilm_head_as_fallback(tmp_path, monkeypatch):
    import rebuttal.learned.gate as gate_module
    import rebuttal.learned.train as train_module
    from test_learned import MarkerReader

    monkeypatch.setenv("REBUTTAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(train_module, "shared_reader", lambda **spec: MarkerReader())
    monkeypatch.setattr(gate_module, "shared_reader", lambda **spec: MarkerReader())
    good = [f"Migrants in town {i} work hard" for i in range(30)]
    bad = [f"Migrants in town {i} are vile" for i in range(30)]
    replies = [{"key": f"k{i}", "system": "fire", "item": f"p{i % 20}", "reply": t} for i, t in enumerate(good + bad)]
    grades = [{"key": f"k{i}", "verdict": "usable" if i < 30 else "unusable", "why": ""} for i in range(60)]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    (tmp_path / "g.jsonl").write_text("".join(json.dumps(g) + "\n" for g in grades))
    spec = {"model": "m", "layers": 3, "max_tokens": 8}
    # keep=1.0: the cut passes every usable reply out of fold, so a new reply like them passes too
    train_draft_score(tmp_path / "r.jsonl", tmp_path / "g.jsonl", tmp_path / "out", keep=1.0, folds=5, states=spec)
    loaded = DraftScore.load(tmp_path / "out" / "draft_score.npz")
    assert loaded.head.meta["states"] == spec and loaded.head.meta["out_of_fold_auc"] > 0.95
    assert loaded.fallback is not None and loaded.fallback.meta["reads"] == "MiniLM sentence vector"
    good, bad = (loaded.review(f"Migrants in town 99 {end}", WordEncoder()) for end in ("work hard", "are vile"))
    assert good.passed and not bad.passed and good.chance > bad.chance
    assert "Fallback head" in (tmp_path / "out" / "draft_score_card.md").read_text()


def test_the_command_says_how_to_train_without_the_chat_model(tmp_path, monkeypatch):
    import rebuttal.learned.train as train_module
    from typer.testing import CliRunner

    from rebuttal.learned.commands import app
    from rebuttal.llm.registry import ModelRegistryError

    def missing(**spec):
        raise ModelRegistryError("model 'qwen2.5-1.5b' is not installed")

    monkeypatch.setenv("REBUTTAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(train_module, "shared_reader", missing)
    replies = [{"key": f"k{i}", "system": "fire", "item": f"p{i % 20}",
                "reply": f"In {1990 + i} the census counted migrants." if i % 2 else f"People are nice {i}."}
               for i in range(48)]
    grades = [{"key": f"k{i}", "verdict": "usable" if i % 2 else "fixable"} for i in range(48)]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    (tmp_path / "g.jsonl").write_text("".join(json.dumps(g) + "\n" for g in grades))
    args = ["train-draft-score", "--replies", str(tmp_path / "r.jsonl"), "--grades", str(tmp_path / "g.jsonl"),
            "--out", str(tmp_path / "out")]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2 and "not installed" in refused.output and "--no-states" in refused.output
    trained = CliRunner().invoke(app, [*args, "--no-states"])
    assert trained.exit_code == 0 and "MiniLM sentence vector" in trained.output
    assert DraftScore.load(tmp_path / "out" / "draft_score.npz").fallback is None


def shipped_rows(shared_data: Path, every: int = 1) -> tuple[list[dict], dict[str, str]]:
    """The graded dev replies the shipped score was trained on, with their posts."""
    from rebuttal.learned.train_draft import graded_rows, silver_posts

    posts = silver_posts(shared_data)
    files = [GRADES / f"fire-{name}-replies.jsonl" for name in ("dev", "heldout", "blocks-dev", "slurs")]
    return graded_rows(files, GRADES / "fire-dev-independent.jsonl", posts)[::every], posts


def test_the_shipped_score_reads_each_reply_with_its_post_and_separates_dev_replies(shared_data):
    """In-sample on what it was trained on, so a floor, not a measurement (see the model card)."""
    from sklearn.metrics import roc_auc_score

    from rebuttal.learned.reply_pairs import pair_vectors
    from rebuttal.llm.embeddings import load_minilm

    score = DraftScore.load()
    assert score.reads_post and score.fallback.meta["pair"] and score.head.meta["states"]["layers"] == 14
    rows, posts = shipped_rows(shared_data, every=3)
    usable = [r["verdict"] == "usable" for r in rows]
    encoder = load_minilm()
    fallback = [usable_chance(score.fallback, pair_vectors(encoder, posts[r["item"]], [r["reply"]]))[0] for r in rows]
    assert len(rows) >= 500 and 0.0 < score.threshold < 1.0
    assert roc_auc_score(usable, fallback) > 0.75  # out of fold: 0.70 (the card)


def test_the_shipped_states_head_separates_graded_dev_replies(shared_data):
    """In-sample on 40 of the replies it was trained on (half a minute through the chat model)."""
    from sklearn.metrics import roc_auc_score

    from rebuttal.llm.registry import ModelRegistryError, gguf_file

    score = DraftScore.load()
    try:
        gguf_file(score.head.meta["states"]["model"])
    except ModelRegistryError:
        pytest.skip("the embedded chat model is not installed")
    rows, posts = shipped_rows(shared_data, every=50)
    usable = [r["verdict"] == "usable" for r in rows]
    chance = [score.review(r["reply"], None, posts[r["item"]]).chance for r in rows]
    assert 5 <= sum(usable) <= 35 and roc_auc_score(usable, chance) > 0.85


def test_a_draft_below_the_cut_keeps_its_text_and_is_flagged():
    from test_fire import ListSearcher, analysis

    reply = {"claim": "the claim", "reply": "Immigrants are people, and everyone deserves respect."}
    model = ScriptedChatModel([analysis("nonfactual", query=None), reply])
    fire = FirePipeline(model, None, ListSearcher(), settings_for(("no-memory",), blocks=False), encoder=WordEncoder(),
                        draft_score=word_score("census"))
    result = fire.respond("Immigrants are disgusting")
    assert result.reply.text == reply["reply"] and result.reply.drafts == 1  # no redraft for the score
    assert result.status == "flagged" and result.trace.flags == ["draft_review_score"]
    assert [c.name for c in result.reply.checks if not c.passed] == ["review_score"]
