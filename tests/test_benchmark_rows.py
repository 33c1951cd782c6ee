"""The benchmark rows kept in git (benchmarks/fire_rows.py archive/restore): no post text goes in,
and a new machine gets the rows back with their posts."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fire_rows  # noqa: E402
import fire_stale  # noqa: E402

ROWS = [{"id": "a", "text": "post a", "status": "ok", "reply": {"text": "reply a"}},
        {"id": "b", "text": "post b", "status": "not_hateful", "reply": None}]


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def kept(tmp_path, monkeypatch):
    monkeypatch.setattr(fire_rows, "ARCHIVE", tmp_path / "kept")
    return tmp_path / "kept"


def test_archived_rows_hold_no_post_text(tmp_path, kept):
    write(tmp_path / "run" / "fire.jsonl", ROWS)
    fire_rows.archive(tmp_path / "run", ("fire", "zero-shot"))  # no zero-shot rows: nothing written
    assert [sorted(r) for r in read(kept / "run" / "fire.jsonl")] == [["id", "reply", "status"]] * 2
    assert not (kept / "run" / "zero-shot.jsonl").exists()


def test_restore_puts_the_posts_back_and_never_overwrites(tmp_path, kept):
    write(tmp_path / "run" / "fire.jsonl", ROWS)
    fire_rows.archive(tmp_path / "run", ("fire",))
    fresh = tmp_path / "fresh" / "run"
    fire_rows.restore(fresh, ("fire",), {"a": "post a"})  # b's post is not in this data: b is left out
    assert read(fresh / "fire.jsonl") == [ROWS[0]]
    write(fresh / "fire.jsonl", ROWS[1:])
    fire_rows.restore(fresh, ("fire",), {"a": "post a", "b": "post b"})
    assert read(fresh / "fire.jsonl") == ROWS[1:]


def test_copies_of_the_post_are_masked_outside_the_reply(tmp_path, kept):
    post = "Those women are all the same: stupid and unreliable."
    row = {"id": "a", "text": post, "status": "ok", "reply": {"text": "Those women are all the same? No."},
           "analysis": {"search_query": "women stereotype Those women are all the same stupid"},
           "trace": {"steps": [{"notes": [f"draft 1 answers the claim: {post}", "draft 1: all checks passed"]}]}}
    write(tmp_path / "run" / "fire.jsonl", [row])
    fire_rows.archive(tmp_path / "run", ("fire",))
    [stored] = read(kept / "run" / "fire.jsonl")
    assert stored["analysis"]["search_query"] == "women stereotype [post]"
    assert stored["trace"]["steps"][0]["notes"] == ["draft 1 answers the claim: [post].", "draft 1: all checks passed"]
    assert stored["reply"] == row["reply"]  # keys its grade
    assert fire_rows.masked("They are all the same", ["they", "are"]) == "[post] all the same"


def test_rule_checks_only_rereads_status_with_todays_text_checks():
    """Without the draft score: a reply only it flagged counts as ok, and an ok reply that fails a
    text check added since its run counts as flagged."""
    analysis = {"reasoning": "It generalises about women."}
    post = "Women are too emotional to run companies."
    scored_out = {"id": "a", "text": post, "status": "flagged", "analysis": analysis,
                  "trace": {"flags": [fire_rows.REVIEW_FLAG]},
                  "reply": {"text": "Mary Barra leads General Motors and Indra Nooyi led PepsiCo for twelve years."}}
    labelled = {**scored_out, "id": "b", "status": "ok", "trace": {"flags": []},
                "reply": {"text": "This statement is false. Women run some of the largest companies in the world."}}
    stopped = {"id": "c", "text": post, "status": "not_hateful", "reply": None}
    rows = fire_rows.rechecked({r["id"]: r for r in (scored_out, labelled, stopped)}, draft_score=False)
    assert {i: r["status"] for i, r in rows.items()} == {"a": "ok", "b": "flagged", "c": "not_hateful"}


def test_the_median_of_an_even_count_is_the_mean_of_the_middle_two():
    """The latency target compares medians of a dozen posts, where FIRE's times split into one-draft
    and redrafted posts: the upper middle value alone overstated FIRE's median."""
    assert fire_rows.percentile([23.5, 24.0, 28.5, 37.1, 40.0, 50.0], 0.5) == pytest.approx(32.8)
    assert fire_rows.percentile([1.0, 2.0, 3.0], 0.9) == pytest.approx(2.8)


def test_rows_whose_block_candidates_the_library_now_changes_are_dropped(tmp_path, monkeypatch):
    from fakes import WordEncoder

    from rebuttal.fire.blocks import BlockLibrary
    from rebuttal.fire.candidates import RIVALS
    from rebuttal.fire.compose import compose_candidates
    from rebuttal.llm import embeddings
    from rebuttal.types import HateType

    monkeypatch.setattr(embeddings, "load_minilm", WordEncoder)
    post, analysis = "Muslims are vermin and a disease", {"target_group": "Muslims", "category": "dehumanization"}
    now = compose_candidates(BlockLibrary.load(WordEncoder()), post, "Muslims", HateType.dehumanization, RIVALS)
    current = [{"origin": "blocks", "note": m.match.block.id} for m in now] + [{"origin": "free", "note": ""}]
    rows = [{"id": "same", "text": post, "analysis": analysis, "reply": {"candidates": current}},
            {"id": "stale", "text": post, "analysis": analysis, "reply": {"candidates": current[1:]}},
            {"id": "stopped", "text": post, "analysis": {"gate": {"hateful": False}}, "reply": None}]
    path = tmp_path / "fire.jsonl"
    fire_rows.write_jsonl(path, rows)
    assert now and fire_stale.drop_blocks_changed(path) == 1
    assert [r["id"] for r in fire_rows.read_jsonl(path)] == ["same", "stopped"]
