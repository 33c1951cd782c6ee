"""benchmarks/spar_audit.py (#48): stored rows keep no post text and no role's free-text `why`;
the paired bootstrap of the report; the sample leaves out the posts spar.py showed."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import spar_audit  # noqa: E402

from rebuttal.data.gold import GoldPost  # noqa: E402
from rebuttal.types import RoleView, SparResult, SparTuple, Trace, TraceStep, TupleReview, Usage  # noqa: E402

POST = "they are all thieves and liars, every one of them, send them back"


def test_stripped_row_has_no_post_text_and_no_why():
    t = SparTuple(target="they", argument="are all thieves and liars", label=1)
    views = [RoleView(role="victim", holds=True, label=1, why=f"the post says '{POST}'"),
             RoleView(role="moderator", holds=False, label=0, why="quotes " + POST)]
    result = SparResult(id="p1", text=POST, lang="en", track="en-main", system="spar-tagger+audit", tuples=[t],
                        reviews=[TupleReview(proposed=t, views=views, decision="kept", final=t, reason="2 of 3")],
                        llm_calls=3, trace=Trace(steps=[TraceStep(stage="review", usage=Usage(prompt_tokens=10,
                                                                                              completion_tokens=4))]))
    row = spar_audit.stripped(result, 1.23456)
    assert "text" not in row and POST not in str(row)
    assert row["reviews"][0]["views"] == [{"role": "victim", "holds": True, "label": 1, "group": None},
                                          {"role": "moderator", "holds": False, "label": 0, "group": None}]
    assert row["tuples"] == [t.model_dump()] and row["reviews"][0]["reason"] == "2 of 3"
    assert (row["llm_calls"], row["prompt_tokens"], row["completion_tokens"], row["seconds"]) == (3, 10, 4, 1.235)


def test_paired_bootstrap_on_two_posts():
    a_gold, b_gold = SparTuple(target="t1", argument="a1", label=1), SparTuple(target="t2", argument="a2", label=0)
    gold = [GoldPost(id="A", text="", lang="en", tuples=[a_gold]), GoldPost(id="B", text="", lang="en", tuples=[b_gold])]
    rows_a = [{"id": "A", "status": "ok", "tuples": [a_gold.model_dump()]}, {"id": "B", "status": "ok", "tuples": []}]
    rows_b = [{"id": "A", "status": "ok", "tuples": [a_gold.model_dump()]},
              {"id": "B", "status": "ok", "tuples": [b_gold.model_dump()]}]
    diff, low, high = spar_audit.paired_bootstrap(gold, spar_audit.predictions(rows_a),
                                                  spar_audit.predictions(rows_b), "en-main", resamples=400)
    # a: five F1s of 2/3 and harm 1 (only the label-1 pair matched); b: all 1
    assert diff == pytest.approx(1 - (5 * 2 / 3 + 1) / 6, abs=1e-5)
    assert (low, high) == (0.0, 1.0)  # a resample of A alone ties; of B alone, a scores 0


def test_decisions_counted():
    rows = [{"reviews": [{"decision": "kept"}, {"decision": "dropped"}]}, {"reviews": [{"decision": "kept"}]}]
    assert spar_audit.decisions(rows) == {"kept": 2, "dropped": 1}


def test_sample_leaves_out_the_earlier_posts(shared_data):
    for lang in ("en", "zh"):
        chosen = spar_audit.posts_for(lang, 60, shared_data)
        earlier = {p.id for p in spar_audit.sample(lang, spar_audit.EARLIER_N, spar_audit.EARLIER_SEED, shared_data)}
        assert len(chosen) == 60 and len({p.id for p in chosen}) == 60 and not earlier & {p.id for p in chosen}
        assert [p.id for p in chosen] == [p.id for p in spar_audit.posts_for(lang, 60, shared_data)]
