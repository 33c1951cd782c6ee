"""The gate's honest evaluation (issue 47): folds that leave whole HateCheck functionalities out, cuts
chosen without the fold they are measured on, a held-out slice of real posts no gate trains on, and
a gate trained on a tiny fixture that separates it."""

import numpy as np
import pytest

from rebuttal.learned import HateGate
from rebuttal.learned.calibration import fold_rates, functionality_folds, threshold_cut, wilson
from rebuttal.learned.datasets import LabelledText, held_out
from rebuttal.learned.gate import train_states_gate


def _cases() -> list[LabelledText]:
    rows = []
    for name, hateful, count in (("slur_h", True, 7), ("threat_norm_h", True, 5), ("derog_neg_emote_h", True, 4),
                                 ("spell_char_del_h", True, 3), ("ident_pos_nh", False, 6),
                                 ("counter_quote_nh", False, 4), ("negate_neg_nh", False, 2)):
        rows += [LabelledText(f"{name} case {i}", hateful, f"hatecheck:{name}", group=f"{name}:{i % 2}")
                 for i in range(count)]
    return rows


def test_functionality_folds_never_put_a_functionality_or_template_in_train_and_test():
    rows = _cases()
    folds = functionality_folds(rows, folds=3)
    assert sorted(np.concatenate(folds).tolist()) == list(range(len(rows)))  # every case tested once
    for test in folds:
        train = np.setdiff1d(np.arange(len(rows)), test)
        assert not {rows[i].source for i in test} & {rows[i].source for i in train}
        assert not {rows[i].group for i in test} & {rows[i].group for i in train}
        assert {rows[i].hateful for i in test} == {True, False}  # each fold can measure recall and FPR


def test_fewer_functionalities_of_a_kind_than_folds_make_fewer_folds():
    rows = [r for r in _cases() if r.source in ("hatecheck:slur_h", "hatecheck:threat_norm_h", "hatecheck:ident_pos_nh",
                                                "hatecheck:counter_quote_nh", "hatecheck:negate_neg_nh")]
    folds = functionality_folds(rows, folds=5)
    assert len(folds) == 2 and all({rows[i].hateful for i in test} == {True, False} for test in folds)


def test_functionality_folds_on_hatecheck_leave_whole_functionalities_out(shared_data):
    from rebuttal.learned import datasets

    for lang in ("en", "zh"):
        rows = datasets.hatecheck(shared_data, lang)
        for test in functionality_folds(rows):
            train = np.setdiff1d(np.arange(len(rows)), test)
            assert not {rows[i].group for i in test} & {rows[i].group for i in train}
            assert not {rows[i].source for i in test} & {rows[i].source for i in train}


def test_a_fold_s_cut_is_chosen_without_its_own_scores():
    # fold 0 holds a benign case at 0.28: the cut on every score would rise above it (to the
    # recall cut, 0.24 on its grid); chosen on the other folds alone it stays at 0.21, and fold 0 pays for it in FPR
    scores = np.array([0.30, 0.25, 0.28, 0.9, 0.85, 0.2, 0.95, 0.8, 0.15])
    hateful = [True, True, False, True, True, False, True, True, False]
    folds = [np.array([0, 1, 2]), np.array([3, 4, 5]), np.array([6, 7, 8])]
    rates, called = fold_rates(scores, hateful, folds, recall_target=0.9, fpr_budget=0.0)
    assert threshold_cut(scores, hateful, 0.9, 0.0) == 0.24
    assert rates[0]["cut"] == threshold_cut(scores[3:], hateful[3:], 0.9, 0.0) == 0.21
    assert rates[0]["recall"] == 1.0 and rates[0]["fpr"] == 1.0 and called[:3].all()
    assert rates[1]["fpr"] == 0.0 and rates[0]["hateful"] == 2 and rates[0]["benign"] == 1


def test_wilson_interval():
    low, high = wilson(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-3) and high == pytest.approx(0.7634, abs=1e-3)
    assert wilson(0, 10)[0] == 0.0 and wilson(0, 10)[1] == pytest.approx(0.2775, abs=1e-3)


def test_a_held_out_post_takes_its_rejections_with_it():
    posts = [LabelledText(f"帖子{i}", True, "state-toxicn", group=f"post:{i}") for i in range(200)]
    held = [p for p in posts if held_out(p)]
    assert 5 <= len(held) <= 40  # about a tenth
    for post in posts:
        rejection = LabelledText("不要这样说", False, "state-toxicn-rejections", group=post.group)
        assert held_out(rejection) == held_out(post)
    assert not held_out(LabelledText("slur_h case", True, "hatecheck:slur_h", group="slur_h:1"))


def test_the_held_out_slice_never_appears_in_training_rows(shared_data):
    from rebuttal.learned import datasets

    for lang in ("en", "zh"):
        real = datasets.real_posts(shared_data, lang)
        assert len(real) > 300 and {r.hateful for r in real} == {True, False}
        trained = datasets.gate_corpus(shared_data, lang)  # every row of the smaller sources
        assert not {r.text for r in real} & {r.text for r in trained}
        if lang == "zh":
            assert not {r.group for r in real} & {r.group for r in trained}  # nor a rejection of one
    sources = {r.source for r in datasets.real_posts(shared_data, "en")}
    assert sources == {"implicit-hate", "ethos", "counterspeech", "gab-test"}


def test_a_states_gate_trained_on_a_tiny_fixture_separates_it(tmp_path):
    rng = np.random.default_rng(0)
    hateful = np.array([True, False] * 30)
    features = rng.normal(size=(60, 16)).astype(np.float32)
    features[hateful, 3] += 2.5  # one direction carries the label
    spec = {"model": "fixture", "layers": 1, "max_tokens": 8}
    gate = train_states_gate(features, hateful, np.ones(60), spec, c=1.0)
    scores = 1 / (1 + np.exp(-(features @ gate.coef + gate.intercept)))
    assert scores[hateful].min() > np.median(scores[~hateful])
    assert scores[hateful].mean() > 0.8 and scores[~hateful].mean() < 0.2
    path = HateGate({"en": gate, "zh": gate}, {"note": "fixture"}).save(tmp_path / "gate.npz")
    loaded = HateGate.load(path).gates["en"]
    assert loaded.states == spec and np.allclose(loaded.coef, gate.coef) and loaded.intercept == pytest.approx(gate.intercept)


def test_the_shipped_gate_s_cuts_load_per_language():
    gate = HateGate.load()
    for lang in ("en", "zh"):
        one = gate.gates[lang]
        assert 0.0 < one.threshold <= one.sure <= 1.01 and one.states is not None
        info = gate.meta["languages"][lang]
        assert info["threshold"] == pytest.approx(one.threshold) and len(info["held_out_scores"]) > 1000
        assert 0.0 < gate.fallbacks[lang].threshold < 1.0
