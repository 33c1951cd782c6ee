"""evaluate_fire end to end with fake judges: missing items, CatAcc, FSc, toxicity, reports."""

import json
import math

import numpy as np
import pytest
from fakes import ScriptedChatModel

from rebuttal.eval.factuality import LLMFactJudge
from rebuttal.eval.fire_io import CATEGORIES, EvalInputError, load_gold, load_predictions
from rebuttal.eval.fire_metrics import Judges, evaluate_fire
from rebuttal.eval.judges import LinearHead, StrategyJudge, ToxicityJudge
from rebuttal.types import Analysis, FireResult, HateType, Reply

LEXICAL = ["rouge1", "rouge2", "rougeL", "meteor", "repetition", "diversity", "novelty"]


class KeywordEncoder:
    """One-hot on the first category name found in the text (else zeros), plus a last
    dimension counting the word 'idiot' for the fake toxicity head."""

    def encode(self, texts):
        rows = []
        for text in texts:
            row = np.zeros(len(CATEGORIES) + 1, dtype=np.float32)
            for k, category in enumerate(CATEGORIES):
                if category in text:
                    row[k] = 1.0
                    break
            row[-1] = text.count("idiot")
            rows.append(row)
        return np.stack(rows)


def fake_judges(fact=None) -> Judges:
    encoder = KeywordEncoder()
    strategy_head = LinearHead(
        coef=np.hstack([np.eye(5) * 10, np.zeros((5, 1))]), intercept=np.zeros(5),
        classes=list(CATEGORIES), meta={"name": "fake-strategy", "version": "fake.v1"})
    toxicity_head = LinearHead(
        coef=np.array([[0, 0, 0, 0, 0, 2.0]]), intercept=np.array([-1.0]),
        classes=["non_toxic", "toxic"], meta={"name": "fake-toxicity", "version": "fake.v1"})
    return Judges(toxicity=ToxicityJudge(toxicity_head, encoder),
                  strategy=StrategyJudge(strategy_head, encoder), fact=fact, encoder=encoder)


def gold_row(item_id, category, refs, evidence=None):
    return {"id": item_id, "hs_type": category, "evidence": evidence, "counterspeech": refs[0],
            "counterspeech_refs": refs}


def fire_row(item_id, category, text, status="ok"):
    result = FireResult(
        id=item_id, text="post", status=status,
        analysis=Analysis(is_hateful=True, target_group="Others", category=HateType(category),
                          reasoning="r") if category else None,
        reply=Reply(text=text, strategy="s") if text else None)
    return result.model_dump(mode="json")


def write_jsonl(path, rows, extra_lines=()):
    lines = [json.dumps(r, ensure_ascii=False) for r in rows] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        gold_row("g1", "misinformation", ["misinformation facts show crime fell"], "Crime fell by 10%."),
        gold_row("g2", "stereotype", ["stereotype people differ a lot"], "Surveys show diversity."),
        gold_row("g3", "dehumanization", ["dehumanization is wrong, they are people"]),
        gold_row("g4", "nonfactual", ["nonfactual be kind"]),
        gold_row("g5", "conspiracy", ["conspiracy theories lack evidence"], "No plot exists."),
        gold_row("g6", "nonfactual", ["be kind"]),
    ])
    pred = write_jsonl(tmp_path / "fire.jsonl", [
        fire_row("g1", "misinformation", "misinformation facts: crime fell"),  # 3-way match
        fire_row("g2", "stereotype", "dehumanization is wrong you idiot"),  # strategy differs
        fire_row("g3", "stereotype", "stereotype replies"),  # category differs from gold
        fire_row("g4", None, None, status="error"),  # no reply
        fire_row("g5", None, None, status="not_hateful"),  # no reply
        fire_row("zz", "stereotype", "not in gold"),
        fire_row("g1", "stereotype", "a duplicate of g1"),
    ], extra_lines=["{not json"])  # g6 missing entirely
    baseline = write_jsonl(tmp_path / "baseline.jsonl", [
        {"id": "g1", "category": "misinformation", "counterspeech": "misinformation idiot idiot"},
        {"id": "g2", "category": "stereotype", "counterspeech": "stereotype people differ a lot"},
        {"id": "g3", "category": "dehumanization_hate", "counterspeech": "dehumanization is wrong"},
        {"id": "g6", "counterspeech": "be kind to everyone"},
    ])
    return gold, pred, baseline


def test_loading_reports_every_unusable_row(files, tmp_path):
    gold, pred, _ = files
    gold_items, problems = load_gold(gold)
    assert list(gold_items) == ["g1", "g2", "g3", "g4", "g5", "g6"] and not problems.bad_rows
    assert gold_items["g3"].evidence is None and gold_items["g1"].evidence == "Crime fell by 10%."
    predictions, problems = load_predictions(pred)
    assert problems.duplicate_ids == ["g1"]
    assert predictions["g1"].reply == "misinformation facts: crime fell"  # the first row is kept
    assert len(problems.bad_rows) == 1 and "invalid JSON" in problems.bad_rows[0]
    empty = write_jsonl(tmp_path / "empty.jsonl", [], extra_lines=["[1, 2"])
    with pytest.raises(EvalInputError):
        load_predictions(empty)
    with pytest.raises(EvalInputError, match="not found"):
        load_predictions(tmp_path / "absent.jsonl")


def test_missing_items_and_catacc_three_way(files):
    gold, pred, _ = files
    report = evaluate_fire(pred, gold, judges=fake_judges(), metrics=["catacc", "toxicity", "rouge1", "fsc"])
    fire = report.systems[0]
    assert fire.n_gold == 6 and fire.n_scored == 3
    assert fire.missing_in_pred == ["g6"]
    assert fire.no_reply == {"g4": "error", "g5": "not_hateful"}
    assert fire.extra_in_pred == ["zz"] and fire.duplicate_ids == ["g1"]
    assert fire.coverage == pytest.approx(3 / 6)
    items = {it.id: it for it in fire.items}
    # g1: gold = pred = detected; g2: gold = pred, detected dehumanization; g3: pred wrong
    assert [items[i].scores["catacc"] for i in ("g1", "g2", "g3")] == [1.0, 0.0, 0.0]
    assert items["g2"].detected_strategy == "dehumanization"
    assert fire.means["catacc"] == pytest.approx(1 / 3)
    assert fire.category_accuracy == pytest.approx(2 / 3)
    assert fire.strategy_agreement == pytest.approx(2 / 3)  # g1 and g3: detected == predicted
    assert fire.confusion == {"misinformation": {"misinformation": 1}, "stereotype": {"stereotype": 1},
                              "dehumanization": {"stereotype": 1}}
    sigmoid = lambda z: 1 / (1 + math.exp(-z))  # noqa: E731
    assert items["g2"].scores["toxicity"] == pytest.approx(sigmoid(2 - 1))
    assert items["g1"].scores["toxicity"] == pytest.approx(sigmoid(-1))
    assert fire.by_category["stereotype"]["catacc"] == 0.0
    assert fire.category_counts["stereotype"] == 1
    assert {j.name for j in report.judges} == {"fake-strategy", "fake-toxicity"}
    assert fire.means["fsc"] is None and any("FSc not computed" in n for n in report.notes)


def test_fsc_with_llm_judge_excludes_items_without_evidence(files):
    gold, pred, _ = files
    chat = ScriptedChatModel([
        {"label": "entailment", "reason": "crime fell is in the evidence"},  # g1
        "no json here", "still no json",  # g2: invalid twice -> judge failure, not a score
    ])
    report = evaluate_fire(pred, gold, judges=fake_judges(LLMFactJudge(chat)), metrics=["fsc"])
    fire = report.systems[0]
    assert len(chat.calls) == 3  # g3 has no gold evidence: never sent to the judge
    assert "Crime fell by 10%." in chat.calls[0]["messages"][0]["content"]
    assert fire.fsc_no_evidence == 1 and fire.fsc_judge_failures == ["g2"]
    assert fire.means["fsc"] == 1.0 and fire.counts["fsc"] == 1
    assert report.judges[0].version.startswith("fact_check.v") and report.judges[0].name == "llm-judge:scripted"


def test_compare_writes_reports_with_ttests(files, tmp_path):
    gold, pred, baseline = files
    out = tmp_path / "report"
    report = evaluate_fire(pred, gold, compare_path=baseline, report_dir=out, judges=fake_judges(),
                           metrics=LEXICAL + ["toxicity", "catacc"])
    fire, base = report.systems
    assert base.name == "baseline" and base.n_scored == 4 and base.missing_in_pred == ["g4", "g5"]
    assert base.no_category == ["g6"]
    # g2's baseline reply equals the reference
    assert next(it for it in base.items if it.id == "g2").scores["rouge1"] == pytest.approx(1.0)
    tests = {t.metric: t for t in report.tests}
    assert tests["toxicity"].n == 3  # g1, g2, g3 scored by both
    # CatAcc on g1-g3: fire 1, 0, 0 (g2's reply reads as dehumanization, g3's category is wrong);
    # the baseline 1, 1, 1. Three pairs are too few for significance, but the direction is known.
    catacc = tests["catacc"]
    assert (catacc.n, catacc.mean_a, catacc.mean_b) == (3, pytest.approx(1 / 3), pytest.approx(1.0))
    assert catacc.better == "baseline" and not catacc.significant
    for name in ("report.md", "report.html", "report.json", "items.jsonl", "confusion_1.png",
                 "confusion_2.png", "metrics.png"):
        assert (out / name).stat().st_size > 0, name
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "R-1 ↑" in markdown and "T ↓" in markdown and "Paired two-tailed t-tests" in markdown
    assert "fake-strategy" in markdown and "fake.v1" in markdown
    assert "g6" in markdown  # the missing item is listed
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<img src='confusion_1.png'" in html and "<img src='metrics.png'" in html
    saved = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert saved["systems"][0]["missing_in_pred"] == ["g6"] and len(saved["tests"]) == 9
    rows = [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 7


def test_unknown_metric_is_a_clear_error(files):
    gold, pred, _ = files
    with pytest.raises(ValueError, match="unknown metrics"):
        evaluate_fire(pred, gold, metrics=["bleu"])


def _cli():
    import typer

    from rebuttal.eval.fire_commands import eval_fire

    app = typer.Typer()
    app.command()(eval_fire)
    return app


def test_eval_fire_command(files, tmp_path):
    from typer.testing import CliRunner

    gold, pred, baseline = files
    runner = CliRunner()
    result = runner.invoke(_cli(), ["--pred", str(pred), "--gold", str(gold), "--compare", str(baseline),
                                    "--report", str(tmp_path / "r"), "--metrics", "rouge1,diversity",
                                    "--fact-judge", "none"])
    assert result.exit_code == 0, result.output
    assert "R-1↑" in result.output and "scored 3/6" in result.output
    assert (tmp_path / "r" / "report.html").exists()
    missing = runner.invoke(_cli(), ["--pred", str(tmp_path / "nope.jsonl"), "--gold", str(gold),
                                     "--fact-judge", "none", "--metrics", "rouge1"])
    assert missing.exit_code == 1 and "input file not found" in missing.output
    no_nli = runner.invoke(_cli(), ["--pred", str(pred), "--gold", str(gold), "--fact-judge", "nli"])
    assert no_nli.exit_code == 1 and "--nli-model" in no_nli.output
