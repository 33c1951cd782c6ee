"""The learned analyst parts: the hate gate (save/load, `sure`, thresholds) and the shipped
category model and gate on sentences whose answer is not in doubt."""

import zlib

import numpy as np
import pytest

from rebuttal.learned import CategoryModel, HateGate
from rebuttal.learned.gate import LanguageGate, train_language_gate
from rebuttal.learned.text import language
from rebuttal.learned.calibration import calibrate, sure_cut
from rebuttal.types import HateType


def test_sure_cut_is_the_lowest_score_few_benign_cases_reach():
    scores = np.array([0.95, 0.9, 0.8, 0.7, 0.92, 0.3, 0.6, 0.65, 0.72, 0.2, 0.1, 0.05])
    hateful = [True] * 4 + [False] * 8  # benign: 0.92, 0.3, 0.6, 0.65, 0.72, 0.2, 0.1, 0.05
    assert sure_cut(scores, hateful, threshold=0.5, max_fpr=0.25) == 0.66  # 2 of 8 benign (0.72, 0.92) reach it
    assert sure_cut(scores, hateful, threshold=0.5, max_fpr=0.125) == 0.73  # only 0.92 left
    assert sure_cut(scores, hateful, threshold=0.5, max_fpr=0.0) == 0.93
    assert sure_cut(np.array([0.99, 0.995]), [True, False], threshold=0.5, max_fpr=0.0) == 1.01  # never


def test_calibrate_lowers_the_threshold_only_within_the_fpr_budget():
    # 10 hateful, 10 benign held-out scores; recall 0.9 holds down to 0.55, benign: one at 0.6, one at 0.45
    hateful_scores = [0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.35]
    benign = [0.6, 0.45, 0.3, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05, 0.05]
    info = {"held_out_scores": hateful_scores + benign}
    hateful = [True] * 10 + [False] * 10
    gate = LanguageGate(np.zeros(1), 0.0, 0.5, False)
    calibrate(gate, info, hateful, recall_target=0.9, max_fpr=0.15, fpr_budget=0.0)
    assert gate.threshold == 0.55 and info["threshold"] == 0.55  # no budget: the recall cut
    calibrate(gate, info, hateful, recall_target=0.9, max_fpr=0.15, fpr_budget=0.1)
    assert gate.threshold == 0.46 and gate.sure == 0.46  # one benign case (0.6) of ten may pass
    calibrate(gate, info, hateful, recall_target=0.5, max_fpr=0.15, fpr_budget=0.1)
    assert gate.threshold == 0.46  # never above the recall cut (0.75 here), lowered to the budget's


def test_gate_round_trip_keeps_sure_and_reads_gates_saved_without_it(tmp_path):
    texts = ["you people are vermin", "they should all be deported", "lovely weather today", "my neighbour bakes bread"] * 5
    labels = [True, True, False, False] * 5
    zh = train_language_gate(["他们都是垃圾", "今天天气很好"] * 5, [True, False] * 5, "zh", None)
    en = train_language_gate(texts, labels, "en", None, threshold=0.5)
    en.sure = 0.83
    path = HateGate({"en": en, "zh": zh}, {"note": "test"}).save(tmp_path / "gate.npz")
    loaded = HateGate.load(path)
    assert loaded.gates["en"].sure == pytest.approx(0.83) and loaded.gates["zh"].sure == pytest.approx(1.01)
    assert loaded.meta == {"note": "test"}
    (high, gate, lang), (low, _, _) = loaded.scores(["you people are vermin", "lovely weather today"])
    assert lang == "en" and gate is loaded.gates["en"] and high > 0.5 > low
    old = {k: v for k, v in np.load(path).items()}
    old["en_head"] = old["en_head"][:3]  # a gate saved before `sure` existed
    np.savez(tmp_path / "old.npz", **old)
    assert HateGate.load(tmp_path / "old.npz").gates["en"].sure == 1.01


class MarkerStates:
    """Token states where the word "vile" sets dimension 0 of its token: a pattern only a model
    that reads tokens can learn (the test needs no MiniLM)."""

    def token_states(self, texts, max_length):
        states, mask = np.zeros((len(texts), max_length, 384), np.float16), np.zeros((len(texts), max_length), bool)
        for row, text in enumerate(texts):
            for col, word in enumerate(text.split()[:max_length]):
                mask[row, col] = True
                states[row, col, 1 + zlib.crc32(word.encode()) % 300] = 1.0
                states[row, col, 0] = 1.0 if word == "vile" else 0.0
        return states, mask


def test_token_head_gate_learns_from_tokens_and_survives_a_round_trip(tmp_path):
    from rebuttal.learned.gate_head import MAX_TOKENS, fit_head

    encoder = MarkerStates()
    texts = [f"{w} people are {a}" for w in ("these", "those", "some", "many") for a in ("vile", "kind", "vile", "tall")] * 4
    labels = np.array(["vile" in t for t in texts])
    states, mask = encoder.token_states(texts, MAX_TOKENS)
    head = fit_head(states, mask, labels, epochs=12)
    zh = train_language_gate(["他们都是垃圾", "今天天气很好"] * 5, [True, False] * 5, "zh", None)
    gate = HateGate({"en": LanguageGate(np.zeros(0, np.float32), 0.0, 0.5, False, 0.9, head), "zh": zh})
    loaded = HateGate.load(gate.save(tmp_path / "gate.npz"))
    probe = ["others are vile", "others are kind"]
    before = [p for p, _, _ in gate.scores(probe, encoder=encoder)]
    after = [p for p, _, _ in loaded.scores(probe, encoder=encoder)]
    assert after == pytest.approx(before, abs=1e-5) and after[0] > 0.5 > after[1]
    assert loaded.gates["en"].sure == pytest.approx(0.9)
    with pytest.raises(ValueError, match="encoder"):
        loaded.scores(probe)


class MarkerReader:
    """A stand-in for the chat model's states: one 8-wide state per word, dimension 0 set by "vile"."""

    dim = 8

    def token_states(self, text):
        words = text.split()
        states = np.zeros((len(words), self.dim), np.float32)
        for i, word in enumerate(words):
            states[i, 0] = word == "vile"
            states[i, 1 + zlib.crc32(word.encode()) % 7] += 1.0
        return words, states

    def count_tokens(self, text):
        return len(text.split())


def test_states_gate_reads_pooled_states_and_falls_back_when_its_model_is_missing(tmp_path):
    from rebuttal.learned.gate import pooled_states, train_states_gate

    reader = MarkerReader()
    texts = [f"{w} people are {a}" for w in ("these", "those", "some", "many") for a in ("vile", "kind", "tall")] * 3
    labels = ["vile" in t for t in texts]
    features = pooled_states(reader, texts)
    assert features.shape == (len(texts), 16) and features[0, 0] == pytest.approx(0.25) and features[0, 8] == 1.0
    spec = {"model": "no-such-model", "layers": 3, "max_tokens": 8}
    zh = train_states_gate(features, labels, np.ones(len(texts)), spec, c=1.0)
    zh.reader = reader
    fallback = train_language_gate(["他们都是垃圾", "今天天气很好"] * 5, [True, False] * 5, "zh", None)
    en = train_language_gate(texts, labels, "en", None)
    gate = HateGate({"en": en, "zh": zh}, {}, {"zh": fallback})
    probe = ["他们 都是 vile", "他们 都是 kind"]
    (high, used, lang), (low, _, _) = gate.scores(probe)
    assert lang == "zh" and used is zh and not gate.is_fallback(used) and high > 0.5 > low
    loaded = HateGate.load(gate.save(tmp_path / "gate.npz"))
    assert loaded.gates["zh"].states == spec and loaded.gates["zh"].kind == "model states"
    loaded.gates["zh"].reader = reader
    assert [p for p, _, _ in loaded.scores(probe)] == pytest.approx([high, low], abs=1e-5)
    loaded.gates["zh"].reader = None  # its model "no-such-model" is not installed: the fallback scores
    (score, used, _), = loaded.scores(["他们都是垃圾"])
    assert loaded.is_fallback(used) and used.kind == "linear" and score >= used.threshold
    loaded.warm_up()  # a missing model is not an error at start-up: its posts fall back (flagged)


def test_warm_up_opens_each_states_gate_reader_once(monkeypatch):
    import rebuttal.learned.gate as gate_module

    opened = []
    monkeypatch.setattr(gate_module, "shared_reader", lambda **spec: opened.append(spec))
    spec = {"model": "m", "layers": 3, "max_tokens": 8}
    states = gate_module.LanguageGate(np.zeros(16), 0.0, 0.5, False, states=spec)
    linear = train_language_gate(["they are vile", "they are kind"] * 3, [True, False] * 3, "en", None)
    HateGate({"en": linear, "zh": states}).warm_up()
    assert opened == [spec]


@pytest.fixture(scope="module")
def minilm():
    from rebuttal.llm.embeddings import load_minilm

    return load_minilm()


def test_shipped_gate_separates_plain_cases(minilm):
    gate = HateGate.load()
    assert 0 < gate.gates["en"].threshold <= gate.gates["en"].sure <= 1.01  # equal: no band (the LLM is not asked)
    texts = ["Immigrants are vermin and should be exterminated.", "I had a lovely lunch with my colleagues today."]
    (hate, g, _), (benign, _, _) = gate.scores(texts, minilm.encode(texts), minilm)
    assert hate >= g.threshold > benign
    (zh_hate, zh_gate, lang), = gate.scores(["这些黑鬼都是垃圾，滚出中国"])
    assert lang == "zh" and zh_hate >= zh_gate.threshold
    assert language("今天天气很好") == "zh" and language("fine weather") == "en"


def test_shipped_category_model_on_unambiguous_posts(minilm):
    from rebuttal.memory import Memory

    model, memory = CategoryModel.load(), Memory.default()
    texts = ["Immigrants are rats and vermin, a disease infesting our cities.",
             "The Jews secretly plan to control the world's banks and replace us."]
    scores = [memory.query(t).scores for t in texts] if model.uses_memory else None
    predicted = [category for category, _, _ in model.predict(texts, minilm.encode(texts), scores)]
    assert predicted == [HateType.dehumanization, HateType.conspiracy]


def test_training_reads_each_text_s_states_once_across_trainings(monkeypatch, tmp_path):
    """train-gate keeps the pooled states in the cache folder: a second training reads only new texts."""
    import rebuttal.learned.train as train_module

    class CountingReader(MarkerReader):
        read = 0

        def token_states(self, text):
            CountingReader.read += 1
            return super().token_states(text)

    monkeypatch.setenv("REBUTTAL_CACHE", str(tmp_path))
    monkeypatch.setattr(train_module, "shared_reader", lambda **spec: CountingReader())
    spec = {"model": "m", "layers": 3, "max_tokens": 8}
    first = train_module.cached_pooled_states(spec, ["they are vile", "they are kind", "they are vile"], chunk=1)
    assert CountingReader.read == 2 and np.allclose(first[0], first[2]) and first[0, 0] == pytest.approx(1 / 3)
    again = train_module.cached_pooled_states(spec, ["they are kind", "others are tall"])
    assert CountingReader.read == 3 and np.allclose(again[0], first[1])
    assert len(list((tmp_path / "gate-states" / "v2-m-l3-t8").glob("shard*.npz"))) == 3


def _states_category_data():
    """Texts whose words say nothing about the category (each number occurs once)."""
    categories = list(HateType)
    return [f"post {i} about people" for i in range(100)], [categories[i % 5] for i in range(100)]


class NumberReader(MarkerReader):
    """States that know the category the words hide: dimension (number mod 5) is set."""

    def token_states(self, text):
        words = text.split()
        states = np.zeros((len(words), self.dim), np.float32)
        states[:, int(words[1]) % 5] = 1.0
        return words, states


def test_category_states_part_learns_what_the_text_hides_and_falls_back_without_it(tmp_path):
    from rebuttal.learned.category import train_category_model
    from rebuttal.learned.gate import pooled_states

    texts, labels = _states_category_data()
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(texts), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    states = pooled_states(NumberReader(), texts)
    spec = {"model": "no-such-model", "layers": 3, "max_tokens": 8}
    model = train_category_model(texts, vectors, labels, states=states, states_spec=spec, states_c=1.0)
    assert model.meta["out_of_fold_accuracy"] > 0.9 > model.meta["out_of_fold_accuracy_text"]
    loaded = CategoryModel.load(model.save(tmp_path / "category.npz"))
    assert loaded.states.spec == spec and loaded.states.weight == model.states.weight
    fused = [c for c, _, _ in loaded.predict(texts[:5], vectors[:5], states=states[:5])]
    assert fused == labels[:5]
    assert np.allclose(loaded.predict_proba(texts[:5], vectors[:5], states=states[:5]),
                       model.predict_proba(texts[:5], vectors[:5], states=states[:5]), atol=1e-4)
    alone = loaded.predict_proba(texts[:5], vectors[:5])  # no states: the text part with its own temperature
    assert np.allclose(alone, model.predict_proba(texts[:5], vectors[:5]), atol=1e-4)
    assert loaded.ambiguous_cut(False) == loaded.ambiguous_below
    assert loaded.ambiguous_cut(True) == loaded.states.ambiguous_below
    with pytest.raises(Exception) as missing:  # its model is not installed
        loaded.states.features(["a post"])
    from rebuttal.learned.gate import MODEL_MISSING
    assert isinstance(missing.value, MODEL_MISSING)


def test_assessor_flags_a_category_model_whose_states_cannot_be_read():
    from rebuttal.fire.assessor import Assessor
    from rebuttal.learned.category import train_category_model
    from rebuttal.learned.gate import pooled_states
    from rebuttal.types import Trace

    texts, labels = _states_category_data()

    class Encoder:
        def encode(self, batch):
            out = np.ones((len(batch), 384), np.float32)
            return out / np.linalg.norm(out, axis=1, keepdims=True)

    spec = {"model": "no-such-model", "layers": 3, "max_tokens": 8}
    model = train_category_model(texts, Encoder().encode(texts), labels,
                                 states=pooled_states(NumberReader(), texts), states_spec=spec, states_c=1.0)
    trace = Trace()
    assessment = Assessor(Encoder(), category_model=model).assess("post 7 about people", trace)
    assert assessment.category_fallback and assessment.category is not None
    assert any("text part alone" in note for note in trace.steps[0].notes)


def test_a_states_reader_reads_a_repeated_text_once(tmp_path):
    """FIRE's gate and category model read the same post: one forward pass serves both."""
    from rebuttal.llm.states import RECENT, ContextualStates

    class Counting(ContextualStates):
        passes = 0

        def _forward(self, text, limit):
            Counting.passes += 1
            return text.split(), np.full((len(text.split()), 4), float(len(text)), np.float32)

    reader = Counting(tmp_path / "none.gguf")
    first = reader.token_states("they are kind")
    again = reader.token_states("they are kind")
    assert Counting.passes == 1 and again[0] == first[0] and np.array_equal(again[1], first[1])
    for i in range(RECENT):
        reader.token_states(f"other text {i}")
    reader.token_states("they are kind")  # pushed out by newer texts: read again
    assert Counting.passes == RECENT + 2


def test_parts_with_different_token_limits_share_one_reader(tmp_path, monkeypatch):
    """The gate (64 tokens) and the draft score (256) read through one llama.cpp context."""
    import rebuttal.llm.states as states_module
    from rebuttal.learned.gate import READER_TOKENS, _open_reader, shared_reader

    class Words(states_module.ContextualStates):
        def _forward(self, text, limit):
            words = text.split()[:limit]
            return words, np.ones((len(words), 4), np.float32)

    opened = []
    monkeypatch.setattr(states_module, "open_states", lambda model, layers, max_tokens: opened.append(max_tokens)
                        or Words(tmp_path / "none.gguf", max_tokens=max_tokens))
    _open_reader.cache_clear()
    try:
        gate, draft = shared_reader("m", 14, 3), shared_reader("m", 14, 5)
        text = "one two three four five six seven"
        assert gate.reader is draft.reader and opened == [READER_TOKENS]
        assert gate.token_states(text)[0] == ["one", "two", "three"] and len(draft.token_states(text)[0]) == 5
        with pytest.raises(ValueError, match="at most"):
            shared_reader("m", 14, READER_TOKENS + 1)
    finally:
        _open_reader.cache_clear()


def test_calibrate_gate_sets_a_language_threshold_by_hand_and_refuses_bad_ones(shared_data, tmp_path):
    from typer.testing import CliRunner

    from rebuttal.learned import HateGate
    from rebuttal.learned.commands import app
    from rebuttal.learned.gate import SHIPPED

    args = ["calibrate-gate", "--gate", str(SHIPPED), "--data-root", str(shared_data), "--out", str(tmp_path)]
    assert CliRunner().invoke(app, [*args, "--threshold", "zh=0.70"]).exit_code == 0
    shipped, by_hand = HateGate.load(SHIPPED), HateGate.load(tmp_path / "gate.npz")
    assert by_hand.gates["zh"].threshold == 0.70 and by_hand.gates["zh"].sure >= 0.70
    assert by_hand.gates["en"].threshold == shipped.gates["en"].threshold  # recalibrated as shipped
    assert "threshold 0.70 (set by hand" in (tmp_path / "gate_card.md").read_text(encoding="utf-8")
    again = CliRunner().invoke(app, ["calibrate-gate", "--gate", str(tmp_path / "gate.npz"), "--data-root",
                                     str(shared_data), "--out", str(tmp_path / "again")])
    assert again.exit_code == 0 and HateGate.load(tmp_path / "again" / "gate.npz").gates["zh"].threshold == \
        shipped.gates["zh"].threshold  # a later calibration without it forgets the hand-set cut
    for bad in ("zh", "zh=1.5", "fr=0.5"):
        refused = CliRunner().invoke(app, [*args, "--threshold", bad])
        assert refused.exit_code == 2 and "error:" in refused.output


def test_calibrate_on_real_posts_takes_the_lowest_cut_within_the_dev_budget_and_no_llm_band():
    # the dev slice: 10 hateful, 10 non-hateful; with a 0.1 budget one non-hateful post (0.62) may pass
    dev = {"scores": [0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.3, 0.2, 0.1, 0.62, 0.44, 0.3, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05, 0.05],
           "hateful": [True] * 10 + [False] * 10}
    info = {"held_out_scores": [0.9, 0.1], "dev_posts": dev, "real_fpr_budget": 0.1}
    gate = LanguageGate(np.zeros(1), 0.0, 0.5, False)
    calibrate(gate, info, [True, False], recall_target=0.9, max_fpr=0.15, fpr_budget=0.125)
    assert gate.threshold == 0.45 == gate.sure and info["threshold"] == 0.45  # 0.44 would let a second one in
    info["real_fpr_budget"] = None  # HateCheck's rule again
    calibrate(gate, info, [True, False], recall_target=0.9, max_fpr=0.15, fpr_budget=0.125)
    assert gate.threshold == 0.11  # recall cut 0.9, lowered while the one benign case (0.1) stays below


def test_a_blended_gate_mixes_its_logit_with_the_linear_gate_s_and_round_trips(tmp_path):
    from rebuttal.learned.gate import blended, pooled_states, train_states_gate

    reader = MarkerReader()
    texts = [f"{w} people are {a}" for w in ("these", "those", "some", "many") for a in ("vile", "kind", "tall")] * 3
    labels = ["vile" in t for t in texts]
    spec = {"model": "no-such-model", "layers": 3, "max_tokens": 8}
    states = train_states_gate(pooled_states(reader, texts), labels, np.ones(len(texts)), spec, c=1.0)
    states.reader = reader
    linear = train_language_gate(texts, labels, "en", None)
    alone = HateGate({"en": states, "zh": linear}, {}, {"en": linear})
    probe = ["many people are vile", "some people are tall"]
    own = [p for p, _, _ in alone.scores(probe)]
    states.blend = 0.25
    with pytest.raises(ValueError, match="partner"):
        states.score(probe, None, "en")
    states.partner = linear
    assert states.kind == "model states + linear"
    mixed = [p for p, _, _ in alone.scores(probe)]
    expected = blended(np.array(own), linear.score(probe, None, "en"), 0.25)
    assert mixed == pytest.approx(list(expected)) and mixed != pytest.approx(own) and mixed[0] > 0.5 > mixed[1]
    assert blended(np.array([0.8]), np.array([0.8]), 0.3) == pytest.approx([0.8])  # agreeing halves: the same
    loaded = HateGate.load(alone.save(tmp_path / "gate.npz"))
    assert loaded.gates["en"].blend == pytest.approx(0.25) and loaded.gates["zh"].blend is None
    loaded.gates["en"].reader = reader
    assert [p for p, _, _ in loaded.scores(probe)] == pytest.approx(mixed, abs=1e-5)
    old = {k: v for k, v in np.load(tmp_path / "gate.npz").items()}
    old["en_head"] = old["en_head"][:4]  # a gate saved before blends existed
    np.savez(tmp_path / "old.npz", **old)
    assert HateGate.load(tmp_path / "old.npz").gates["en"].blend is None
