import json

import pytest

from rebuttal.data.gold import GoldFormatError, load_gold, load_state_toxicn, load_tbo
from rebuttal.data.vocab import parse_label


def test_state_toxicn_rows_become_tuples(tmp_path):
    path = tmp_path / "st.json"
    path.write_text(json.dumps([
        {"id": 1, "content": "A", "Q1 Target": "黑人", "Q1 Argument": "素质低", "Q1 Group": "Racism",
         "Q1 hateful": "hate", "Q2 Target": "你", "Q2 Argument": "坦白吧", "Q2 Group": "non-hate",
         "Q2 hateful": "non-hate"},
        {"id": 2, "content": "B", "Q1 Target": "NULL", "Q1 Argument": "滚", "Q1 Group": "Sexism, Racism ",
         "Q1 hateful": None},
    ], ensure_ascii=False), encoding="utf-8")
    posts = load_state_toxicn(path)
    assert [p.id for p in posts] == ["1", "2"] and posts[0].lang == "zh"
    first = posts[0].tuples
    assert [(t.target, t.argument, t.label, t.group) for t in first] == [
        ("黑人", "素质低", 1, "Racism"), ("你", "坦白吧", 0, "non-hate")]
    # a missing label follows the group; stray spaces in the group are removed
    assert (posts[1].tuples[0].label, posts[1].tuples[0].group) == (1, "Sexism, Racism")
    assert load_gold(path)[1].tuples[0].target == "NULL"


def test_tbo_jsonl(tmp_path):
    path = tmp_path / "tbo.jsonl"
    path.write_text(json.dumps({"id": "5", "text": "@USER Keep them dumb", "tuples": [
        {"target": "NULL", "argument": "dumb", "harmful": "NO"}, {"target": "@USER", "argument": "Keep them dumb",
                                                                  "harmful": "YES"}]}) + "\n")
    posts = load_gold(path)
    assert posts[0].lang == "en" and [t.label for t in posts[0].tuples] == [0, 1]
    assert load_tbo(path)[0].tuples[1].target == "@USER"


def test_bad_gold_files_raise_clear_errors(tmp_path):
    with pytest.raises(GoldFormatError, match="not found"):
        load_gold(tmp_path / "missing.json")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "x"}\n')
    with pytest.raises(GoldFormatError, match="line 1"):
        load_tbo(bad)
    with pytest.raises(ValueError):
        parse_label("maybe")


def test_real_files_load(shared_data):
    zh = load_state_toxicn(shared_data / "state-toxicn" / "train.json")
    en = load_tbo(shared_data / "tbo" / "train.jsonl")
    assert len(zh) == 6424 and len(en) == 3200
    assert sum(len(p.tuples) for p in zh) == 6424 + 970 + 190 + 39 + 7 + 1
    assert all(t.label in (0, 1) for p in en for t in p.tuples)
