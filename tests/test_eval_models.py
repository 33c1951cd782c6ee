"""Model-backed metrics and judges: one small check each (they load the packaged MiniLM)."""

import shutil

import numpy as np
import pytest

from rebuttal.eval.judges import REBUILD, JudgeWeightsError, LinearHead, StrategyJudge, ToxicityJudge


def test_bertscore_with_packaged_minilm():
    from rebuttal.eval.semantic import BertScore

    scorer = BertScore()
    same, other = scorer.f1(
        ["Refugees are people fleeing war.", "Refugees are people fleeing war."],
        [["Refugees are people fleeing war.", "Nothing alike."], ["The stock market closed higher."]],
    )
    assert same == pytest.approx(1.0, abs=1e-4)
    assert other < 0.9
    assert scorer.info.layer == 6 and not scorer.info.rescaled
    assert scorer.info.hash.startswith("all-MiniLM-L6-v2_L6_no-idf_version=")


def test_cosim_and_shipped_judges_with_minilm():
    from rebuttal.eval.semantic import cosim
    from rebuttal.llm.embeddings import load_minilm

    encoder = load_minilm()
    scores = cosim(encoder, ["Muslims are our neighbours.", "I like trains."],
                   [["Muslims are our neighbours.", "Other text."], ["Tax rates rose in 2019."]])
    assert scores[0] == pytest.approx(1.0, abs=1e-5) and scores[1] < 0.5

    toxicity = ToxicityJudge(encoder=encoder)
    kind, hateful = toxicity.scores([
        "Thank you for sharing, everyone deserves respect and a fair hearing.",
        "Those disgusting vermin should be exterminated, kill them all.",
    ])
    assert kind < 0.5 < hateful
    assert toxicity.info.version == "toxicity-minilm-lr.v2"
    strategy = StrategyJudge(encoder=encoder)
    assert set(strategy.head.classes) == {"misinformation", "stereotype", "conspiracy",
                                          "dehumanization", "nonfactual"}
    detected = strategy.detect(["Studies by the national statistics office show crime rates "
                                "among immigrants are lower than claimed; the data says otherwise."])
    assert detected[0] in strategy.head.classes
    assert "held-out accuracy" in strategy.info.details


def test_linear_head_round_trip_and_bad_file(tmp_path):
    head = LinearHead(coef=np.array([[1.0, -1.0]]), intercept=np.array([0.5]),
                      classes=["non_toxic", "toxic"], meta={"version": "t.v1"})
    head.save(tmp_path / "h.npz")
    loaded = LinearHead.load(tmp_path / "h.npz")
    probs = loaded.probabilities(np.array([[1.0, 0.0]]))
    assert probs[0, 1] == pytest.approx(1 / (1 + np.exp(-1.5)), rel=1e-6)
    assert loaded.version == "t.v1" and loaded.predict(np.array([[-5.0, 0.0]])) == ["non_toxic"]
    (tmp_path / "bad.npz").write_bytes(b"not an npz")
    with pytest.raises(JudgeWeightsError, match="train_judges"):
        LinearHead.load(tmp_path / "bad.npz", REBUILD)


def test_nli_judge_maps_labels_from_a_local_model(tmp_path):
    """A tiny NLI-shaped model built here (no download) whose head always says entailment."""
    import torch
    import transformers

    from rebuttal.eval.factuality import NLIFactJudge
    from rebuttal.llm.embeddings import minilm_path

    config = transformers.BertConfig(
        vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, num_labels=3,
        id2label={0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"},
        label2id={"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2})
    model = transformers.BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([0.0, 0.0, 50.0]))
    model.save_pretrained(tmp_path)
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json"):
        shutil.copy(minilm_path() / name, tmp_path / name)
    judge = NLIFactJudge(tmp_path, batch_size=2)
    assert judge.judge([("Crime fell.", "Crime fell."), ("a", "b"), ("c", "d")]) == ["entailment"] * 3
    assert judge.info.role == "factuality"
