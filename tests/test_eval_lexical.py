"""Lexical metrics and the paired t-test on tiny hand-computed cases."""

import math

import pytest

from rebuttal.eval import lexical
from rebuttal.eval.significance import paired_ttest


def test_rouge_english_hand_computed():
    # reply [the cat sat] vs reference [the cat ran away]: 2 shared unigrams, 1 shared bigram.
    scores = lexical.rouge("The cat sat.", ["the cat ran away"])
    assert scores["rouge1"] == pytest.approx(2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4))  # 4/7
    assert scores["rouge2"] == pytest.approx(2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3))  # 0.4
    assert scores["rougeL"] == pytest.approx(4 / 7)  # LCS "the cat"


def test_rouge_keeps_the_best_reference():
    scores = lexical.rouge("the cat sat", ["a dog barked", "the cat sat"])
    assert scores["rouge1"] == pytest.approx(1.0)


def test_rouge_chinese_uses_jieba():
    from rouge_score import rouge_scorer

    # rouge-score's own tokenizer drops every Chinese character
    assert rouge_scorer.RougeScorer(["rouge1"]).score("我爱上海", "我爱北京")["rouge1"].fmeasure == 0.0
    assert lexical.words("我爱北京") == ["我", "爱", "北京"]
    scores = lexical.rouge("我爱北京", ["我爱上海"])  # [我 爱 北京] vs [我 爱 上海]
    assert scores["rouge1"] == pytest.approx(2 / 3)
    assert scores["rouge2"] == pytest.approx(1 / 2)  # bigram 我爱 shared of 2
    assert scores["rougeL"] == pytest.approx(2 / 3)


def test_meteor_hand_computed():
    # exact match of 6 words in one chunk: fmean 1, penalty 0.5 * (1/6)^3
    assert lexical.meteor("the cat sat on the mat", ["the cat sat on the mat"]) == pytest.approx(
        1 - 0.5 / 216, abs=1e-6)
    # 3 of 6 matched: P=1, R=.5, fmean = PR / (.9P + .1R), one chunk: penalty .5 * (1/3)^3
    fmean = 0.5 / (0.9 + 0.05)
    assert lexical.meteor("the cat sat", ["the cat sat on a mat"]) == pytest.approx(
        fmean * (1 - 0.5 / 27), abs=1e-6)
    # "car" matches "auto" only through WordNet synonyms (NLTK looks synonyms up on
    # Porter stems, so words whose stem differs, like "large", do not match this way)
    assert lexical.meteor("the car is red", ["the auto is red"]) == pytest.approx(
        1 - 0.5 / 64, abs=1e-6)
    # without a synonym: 3 of 4 matched in 2 chunks, fmean .75, penalty .5 * (2/3)^3
    assert lexical.meteor("the car is red", ["the bus is red"]) == pytest.approx(
        0.75 * (1 - 0.5 * (2 / 3) ** 3), abs=1e-6)


def test_meteor_without_wordnet_says_how_to_install(monkeypatch, tmp_path):
    import nltk

    lexical.ensure_wordnet.cache_clear()
    monkeypatch.setenv("REBUTTAL_HOME", str(tmp_path))
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "elsewhere")])
    try:
        with pytest.raises(lexical.WordNetMissing, match="setup_wordnet.sh"):
            lexical.ensure_wordnet()
    finally:
        lexical.ensure_wordnet.cache_clear()


def test_diversity_novelty_repetition_hand_computed():
    assert lexical.diversity("The cat and the dog") == pytest.approx(4 / 5)
    assert lexical.diversity("") == 0.0
    # {the cat sat} vs {the dog sat}: Jaccard 2/4; vs {a bird}: 0
    assert lexical.novelty("the cat sat", ["the dog sat", "a bird"]) == pytest.approx(0.5)
    assert lexical.novelty("我爱北京", ["我爱北京"]) == pytest.approx(0.0)
    rates = lexical.repetition_rates([
        "We should respect everyone here", "we should respect all people", "kindness matters",
    ])
    # trigram "we should respect" is shared; each of the first two has 3 distinct trigrams
    assert rates == pytest.approx([1 / 3, 1 / 3, 0.0])


def _t3_cdf(t: float) -> float:
    """Student t CDF with 3 degrees of freedom, closed form."""
    x = t / math.sqrt(3)
    return 0.5 + (x / (1 + x * x) + math.atan(x)) / math.pi


def test_paired_ttest_hand_computed():
    a = {"1": 1.0, "2": 2.0, "3": 3.0, "4": 4.0, "only-a": 9.0}
    b = {"1": 0.5, "2": 1.5, "3": 3.5, "4": 2.0, "none": None}
    # differences .5 .5 -.5 2: mean .625, sample sd sqrt(3.1875/3), se = sd/2
    t = 0.625 / (math.sqrt(3.1875 / 3) / 2)
    result = paired_ttest("rouge1", a, b, name_a="A", name_b="B")
    assert result.n == 4
    assert result.t == pytest.approx(t)
    assert result.p == pytest.approx(2 * (1 - _t3_cdf(t)))
    assert result.significant is False
    assert result.better == "A"
    lower = paired_ttest("toxicity", a, b, name_a="A", name_b="B", lower_is_better=True)
    assert lower.better == "B"


def test_paired_ttest_significant_and_degenerate_cases():
    a = {str(i): 0.9 + 0.01 * (i % 3) for i in range(20)}
    b = {str(i): 0.1 + 0.01 * (i % 2) for i in range(20)}
    result = paired_ttest("cosim", a, b, name_a="fire", name_b="base")
    assert result.significant and result.p < 1e-10 and result.better == "fire"
    same = paired_ttest("cosim", a, dict(a), name_a="x", name_b="y")
    assert (same.t, same.p, same.better, same.significant) == (0.0, 1.0, "tie", False)
    short = paired_ttest("cosim", {"1": 1.0}, {"1": 0.0}, name_a="x", name_b="y")
    assert short.t is None and short.note == "fewer than 2 paired items"
