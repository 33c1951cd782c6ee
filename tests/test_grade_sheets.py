"""Grading sheets split over grader instances and merged back (benchmarks/grade_sheets.py): every
key of a part must come back exactly once with a known verdict; new grades and second grades of
earlier-graded replies go to different files."""

import argparse
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fire_grading  # noqa: E402
import grade_sheets  # noqa: E402


def write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def grades(tmp_path, monkeypatch):
    folder = tmp_path / "grades"
    folder.mkdir()
    write(folder / "fire-dev-independent.jsonl", [{"key": "old", "verdict": "usable", "why": "on topic: fine"}])
    monkeypatch.setattr(fire_grading, "GRADES", folder)
    monkeypatch.setattr(grade_sheets, "GRADES", folder)
    monkeypatch.setattr(grade_sheets, "REGRADES", folder / "fire-dev-regrades.jsonl")
    return folder


def test_split_then_merge_keeps_new_grades_and_regrades_apart(tmp_path, grades):
    sheet = tmp_path / "sheet.jsonl"
    write(sheet, [{"key": k, "post": "p", "reply": "r"} for k in ("a", "b", "old")])
    grade_sheets.split(argparse.Namespace(sheet=sheet, parts=2, anchors=0, seed=0))
    for part in (tmp_path / "sheet.part0.jsonl", tmp_path / "sheet.part1.jsonl"):
        keys = [json.loads(line)["key"] for line in part.read_text().splitlines()]
        write(part.with_suffix(".graded.jsonl"), [{"key": k, "verdict": "fixable", "why": "x"} for k in keys])
    grade_sheets.merge(argparse.Namespace(sheet=sheet))
    new = [json.loads(line) for line in (grades / "fire-dev-independent.jsonl").read_text().splitlines()]
    again = [json.loads(line) for line in (grades / "fire-dev-regrades.jsonl").read_text().splitlines()]
    assert sorted(g["key"] for g in new) == ["a", "b", "old"] and new[0]["verdict"] == "usable"
    assert again == [{"key": "old", "verdict": "fixable", "why": "x"}]


def test_merge_refuses_a_part_with_a_missing_key_or_unknown_verdict(tmp_path, grades):
    sheet = tmp_path / "sheet.jsonl"
    write(tmp_path / "sheet.part0.jsonl", [{"key": k, "post": "p", "reply": "r"} for k in ("a", "b")])
    write(tmp_path / "sheet.part0.graded.jsonl", [{"key": "a", "verdict": "usable", "why": "x"}])
    with pytest.raises(SystemExit, match="missing 1"):
        grade_sheets.merge(argparse.Namespace(sheet=sheet))
    write(tmp_path / "sheet.part0.graded.jsonl", [{"key": "a", "verdict": "usable", "why": "x"},
                                                  {"key": "b", "verdict": "great", "why": "x"}])
    with pytest.raises(SystemExit, match="no known verdict"):
        grade_sheets.merge(argparse.Namespace(sheet=sheet))
    assert not (grades / "fire-dev-regrades.jsonl").exists()


def test_the_ok_share_carries_its_95_percent_interval():
    """7 usable of 9 `ok` drafts: the interval spans the 85% target, so the report cannot claim it."""
    assert fire_grading.share_interval(7, 9) == " (45-94%)"
    assert fire_grading.share_interval(25, 36) == " (53-82%)"
    assert fire_grading.share_interval(0, 0) == ""


def test_paired_usable_and_category_table_count_only_graded_usable_replies(grades):
    """FIRE's gate stopped post c, which the baseline answered usably: the paired line keeps it apart."""
    def rows(replies):
        return {i: {"reply": {"text": t}} if t else {} for i, t in replies.items()}

    fire = rows({"a": "fire a", "b": "fire b", "c": None})
    base = rows({"a": "base a", "b": "base b", "c": "base c"})
    verdicts = {("fire", "a"): "usable", ("fire", "b"): "harmful", ("zero-shot", "a"): "fixable",
                ("zero-shot", "b"): "usable", ("zero-shot", "c"): "usable"}
    keys = {**{("fire", i): k for i, k in fire_grading.reply_keys("fire", fire).items()},
            **{("zero-shot", i): k for i, k in fire_grading.reply_keys("zero-shot", base).items()}}
    write(grades / "fire-dev-independent.jsonl", [{"key": keys[s], "verdict": v, "why": ""} for s, v in verdicts.items()])
    line = fire_grading.paired_usable(("fire", "fire", fire), ("zero-shot", "zero-shot", base), "independent")
    assert line == ("On the 2 posts both answered: fire 1 usable, zero-shot 1; "
                    "on the 1 posts only zero-shot answered, 1 usable.")
    table = fire_grading.category_table([("fire", "fire", fire), ("zero-shot", "zero-shot", base)],
                                        {"a": "stereotype", "b": "stereotype", "c": "conspiracy"}, "independent")
    assert table[0] == "| system | conspiracy | stereotype |"
    assert table[2:] == ["| fire | 0/0 | 1/2 |", "| zero-shot | 1/1 | 1/2 |"]
