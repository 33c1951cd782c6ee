import json
from difflib import SequenceMatcher

import pytest
from typer.testing import CliRunner

from rebuttal.data.gold import GoldPost
from rebuttal.eval.spar_scoring import (
    Predictions, format_report, greedy_matches, read_predictions, score_state_toxicn, score_tbo,
    soft_equal, tuple_matcher,
)
from rebuttal.types import SparTuple


def T(target, argument, label=1, group=None):
    return SparTuple(target=target, argument=argument, label=label, group=group)


def preds(mapping):
    return Predictions(tuples=mapping)


def test_a_gold_tuple_two_predictions_could_match_is_counted_once():
    gold = [GoldPost("1", "x", "zh", [T("黑人", "素质低")])]
    result = score_state_toxicn(preds({"1": [T("黑人", "素质低"), T("黑人", "素质低")]}), gold)
    triple = result["metrics"]["triple"]["hard"]
    assert (triple["tp"], triple["predicted"], triple["gold"]) == (1, 2, 1)
    assert triple["precision"] == 0.5 and triple["recall"] == 1.0
    assert triple["f1"] == pytest.approx(2 / 3, abs=1e-6)


def test_greedy_matching_follows_the_official_order():
    # pred 0 takes gold 0 (first match); pred 1 then takes the remaining gold 1.
    golds = [T("a", "x"), T("a", "x")]
    equal = tuple_matcher(("target", "argument"), soft=False)
    assert greedy_matches([T("a", "x"), T("a", "x"), T("a", "x")], golds, equal) == [(0, 0), (1, 1)]


def test_multi_tuple_post_hard_and_soft_scores():
    gold = [GoldPost("p", "...", "zh", [T("同性恋", "高贵", 1, "LGBTQ"), T("你", "坦白吧", 0, "non-hate")])]
    predicted = [T("同性恋们", "高贵", 1, "LGBTQ"), T("你", "坦白吧，放过人家", 0, "non-hate"), T("他", "滚", 1, "others")]
    result = score_state_toxicn(preds({"p": predicted}), gold, quad=True)
    m = result["metrics"]
    assert m["target"]["hard"]["tp"] == 1 and m["target"]["soft"]["tp"] == 2
    # 坦白吧 vs 坦白吧，放过人家: ratio 2*3/11 = 0.545 ≥ 0.5 → soft match
    assert m["argument"]["hard"]["tp"] == 1 and m["argument"]["soft"]["tp"] == 2
    assert m["quad"]["hard"]["tp"] == 0 and m["quad"]["soft"]["tp"] == 2
    assert m["quad"]["soft"]["precision"] == pytest.approx(2 / 3)
    assert m["quad"]["soft"]["recall"] == 1.0
    f1s = [m[n][k]["f1"] for n in m for k in ("hard", "soft")]
    assert result["average"] == pytest.approx(sum(f1s) / 10, abs=1e-6)


def test_soft_threshold_edge_exactly_half_matches_and_just_below_does_not():
    assert SequenceMatcher(None, "ab", "ac").ratio() == 0.5
    assert soft_equal("ab", "ac")
    assert SequenceMatcher(None, "abc", "axy").ratio() < 0.5
    assert not soft_equal("abc", "axy")
    gold = [GoldPost("1", "x", "zh", [T("ab", "ab", 1)])]
    at_edge = score_state_toxicn(preds({"1": [T("ac", "ac", 1)]}), gold)
    assert at_edge["metrics"]["pair"]["soft"]["tp"] == 1 and at_edge["metrics"]["pair"]["hard"]["tp"] == 0
    below = score_state_toxicn(preds({"1": [T("abc", "ab", 1)]}), [GoldPost("1", "x", "zh", [T("axy", "ab", 1)])])
    assert below["metrics"]["pair"]["soft"]["tp"] == 0


def test_soft_matching_is_exact_on_label_and_group():
    gold = [GoldPost("1", "x", "zh", [T("女人", "不配", 1, "Sexism")])]
    wrong_label = score_state_toxicn(preds({"1": [T("女人", "不配", 0, "Sexism")]}), gold, quad=True)
    assert wrong_label["metrics"]["triple"]["soft"]["tp"] == 0
    assert wrong_label["metrics"]["pair"]["soft"]["tp"] == 1
    wrong_group = score_state_toxicn(preds({"1": [T("女人", "不配", 1, "Racism")]}), gold, quad=True)
    assert wrong_group["metrics"]["triple"]["hard"]["tp"] == 1 and wrong_group["metrics"]["quad"]["soft"]["tp"] == 0


def test_null_targets_match_only_null():
    gold = [GoldPost("1", "x", "en", [T("NULL", "fuck", 0), T("@USER", "dumb", 1)])]
    result = score_tbo(preds({"1": [T("NULL", "fuck", 0), T("NULL", "dumb", 1)]}), gold)
    m = result["metrics"]
    assert m["target"]["tp"] == 1  # NULL matches NULL once; the second NULL finds no gold
    assert m["argument"]["tp"] == 2
    assert m["nta"]["tp"] == 1 and m["ta"]["tp"] == 1 and m["targeted"]["tp"] == 1


def test_tbo_metrics_and_harm_on_matched_targets():
    gold = [GoldPost("1", "x", "en", [T("you people", "horrible embarrassment", 1), T("@USER", "Fuck", 0)]),
            GoldPost("2", "y", "en", [T("republican", "Keep them dumb", 1)])]
    predicted = {"1": [T("you people", "horrible", 1), T("@USER", "Fuck", 1)],
                 "2": [T("republican", "Keep them dumb", 1)]}
    result = score_tbo(preds(predicted), gold)
    m = result["metrics"]
    assert m["target"]["f1"] == 1.0
    assert m["argument"]["tp"] == 2 and m["nta"]["tp"] == 2
    assert m["ta"]["tp"] == 1 and m["targeted"]["tp"] == 2
    # Harm: matched pairs (gold, pred) labels = (1,1), (0,1), (1,1): class 1 F1 = 0.8, class 0 F1 = 0.
    assert m["harm"]["matched_targets"] == 3 and m["harm"]["f1"] == pytest.approx(0.4)
    assert result["average"] == pytest.approx(sum(v["f1"] for v in m.values()) / 6, abs=1e-6)
    assert "| Target | Argument | Targeted | NTA | TA | Harm | avg |" in format_report(result)


def test_missing_and_error_predictions_count_as_misses(tmp_path):
    pred_file = tmp_path / "pred.jsonl"
    pred_file.write_text("\n".join([
        json.dumps({"id": "1", "status": "ok", "tuples": [{"target": "a", "argument": "b", "label": 1}]}),
        json.dumps({"id": "2", "status": "error", "message": "boom"}),
        "{not json",
        json.dumps({"id": "9", "tuples": [{"target": "a", "argument": "b", "harmful": "YES"}]}),
    ]) + "\n")
    loaded = read_predictions(pred_file)
    assert loaded.error_ids == ["2"] and loaded.bad_rows == 1 and loaded.tuples["9"][0].label == 1
    gold = [GoldPost(str(i), "t", "en", [T("a", "b", 1)]) for i in (1, 2, 3)]
    result = score_tbo(loaded, gold)
    assert result["missing_predictions"] == 1 and result["error_rows"] == 1 and result["unknown_ids"] == 1
    assert result["metrics"]["ta"]["recall"] == pytest.approx(1 / 3)


def test_eval_spar_command_scores_gold_against_itself(tmp_path):
    import typer

    from rebuttal.eval.spar_commands import eval_spar_command

    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps([{"id": 7, "content": "笑死，高贵的同性恋", "Q1 Target": "同性恋",
                                 "Q1 Argument": "高贵", "Q1 Group": "LGBTQ", "Q1 hateful": "hate"}],
                               ensure_ascii=False), encoding="utf-8")
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"id": "7", "tuples": [{"target": "同性恋", "argument": "高贵", "label": 1,
                                                       "group": "LGBTQ"}]}, ensure_ascii=False) + "\n")
    app = typer.Typer()
    app.command()(eval_spar_command)
    report = tmp_path / "r.json"
    out = CliRunner().invoke(app, ["--pred", str(pred), "--gold", str(gold), "--track", "zh-quad",
                                   "--report", str(report)])
    assert out.exit_code == 0, out.output
    assert "100.00 / 100.00" in out.output
    assert json.loads(report.read_text())["average"] == 1.0
    wrong = CliRunner().invoke(app, ["--pred", str(pred), "--gold", str(gold), "--track", "en-main"])
    assert wrong.exit_code == 2
    missing = CliRunner().invoke(app, ["--pred", str(tmp_path / "nope"), "--gold", str(gold), "--track", "zh-main"])
    assert missing.exit_code == 2 and "not found" in missing.output
