"""The shipped English recipe end to end on a tiny data folder: a states gate blended with the
linear gate, cut on the real-post dev slice (issue 47). The chat model's states and MiniLM are
stand-ins, so the test needs neither."""

import json
import zlib

import numpy as np
import pytest

from rebuttal.learned import HateGate
from rebuttal.learned.calibration import sure_cut
from test_learned import MarkerReader

GROUPS = ("women", "migrants", "muslims", "jews", "gays", "elders")


def _posts(n: int, offset: int = 0) -> list[tuple[str, bool]]:
    """Hateful posts say "vile", the others "kind"; a number makes each text unique."""
    return [(f"{GROUPS[i % 6]} are {'vile' if i % 2 else 'kind'} number {offset + i}", bool(i % 2)) for i in range(n)]


def _data(root):
    sources = root / "hate-sources"
    sources.mkdir(parents=True)
    rows = ["post\tclass"] + [f"{t}\t{'implicit_hate' if h else 'not_hate'}" for t, h in _posts(200)]
    (sources / "implicit_hate_v1_stg1_posts.tsv").write_text("\n".join(rows), encoding="utf-8")
    rows = ["comment;isHate"] + [f"{t};{1.0 if h else 0.0}" for t, h in _posts(60, 1000)]
    (sources / "Ethos_Dataset_Binary.csv").write_text("\n".join(rows), encoding="utf-8")
    for part, offset in (("train", 2000), ("test", 3000)):
        rows = ["text\thd\tcv"] + [f"{t}\t{int(h)}\t0" for t, h in _posts(200, offset)]
        (sources / f"ghc_{part}.tsv").write_text("\n".join(rows), encoding="utf-8")
    (root / "counterspeech-sources").mkdir()
    (root / "counterspeech-sources" / "cs.jsonl").write_text(
        "\n".join(json.dumps({"counterspeech": f"{GROUPS[i % 6]} are kind neighbours {i}"}) for i in range(60)))
    (root / "factualcs-silver").mkdir()
    (root / "factualcs-silver" / "train.jsonl").write_text(
        "\n".join(json.dumps({"hate_speech": t, "is_hateful": True}) for t, h in _posts(80, 4000) if h))
    (root / "hatecheck-en").mkdir()
    cases = [{"test_case": f"{g} are {'vile' if bad else 'kind'} case {t}", "label_gold": "hateful" if bad else "non-hateful",
              "functionality": f"{'derog' if bad else 'ident'}_{t % 5}_{'h' if bad else 'nh'}", "templ_id": t * 2 + bad}
             for t in range(10) for bad in (0, 1) for g in GROUPS[:2]]
    (root / "hatecheck-en" / "dev.jsonl").write_text("\n".join(map(json.dumps, cases)), encoding="utf-8")
    return root


def _vectors(texts):
    """MiniLM's stand-in: a 384-wide vector per text, dimension 0 set by "vile"."""
    out = np.zeros((len(texts), 384), np.float32)
    for i, text in enumerate(texts):
        out[i, 0] = "vile" in text.split()
        out[i, 1 + zlib.crc32(text.encode()) % 383] = 1.0
    return out


def test_the_english_blend_trains_cuts_on_the_dev_slice_separates_and_round_trips(tmp_path, monkeypatch):
    import rebuttal.learned.train as train_module

    monkeypatch.setenv("REBUTTAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(train_module, "shared_reader", lambda **spec: MarkerReader())
    monkeypatch.setattr(train_module, "minilm_vectors", _vectors)
    gate = train_module.train_gate(_data(tmp_path / "data"), tmp_path / "out", keep=HateGate.load().only(["zh"]))
    en, info = gate.gates["en"], gate.meta["languages"]["en"]
    assert en.kind == "model states + linear" and en.blend == train_module.BLEND_WEIGHT
    assert info["real_fpr_budget"] == train_module.REAL_FPR_BUDGET and en.sure == en.threshold
    dev = info["dev_posts"]
    scores, hateful = np.array(dev["scores"]), np.array(dev["hateful"])
    assert hateful.sum() > 0 and (~hateful).sum() > 0 and scores[hateful].min() > scores[~hateful].max()  # separated
    # the lowest cut within the dev budget: here every benign post is below even the lowest cut tried
    assert en.threshold == sure_cut(scores, list(hateful), 0.05, train_module.REAL_FPR_BUDGET) == 0.06
    assert set(info["fallback"]["sources"]) >= {"implicit-hate", "gab", "counterspeech", "hatecheck"}
    card = (tmp_path / "out" / "gate_card.md").read_text(encoding="utf-8")
    assert "blended with the linear gate" in card and "real-post dev slice" in card
    loaded = HateGate.load(tmp_path / "out" / "gate.npz")
    loaded.gates["en"].reader = MarkerReader()
    probe = ["migrants are vile number 99999", "migrants are kind number 99998"]
    (high, used, lang), (low, _, _) = loaded.scores(probe, _vectors(probe))
    assert lang == "en" and used is loaded.gates["en"] and high >= used.threshold and high > 0.9 > 0.1 > low
    assert loaded.gates["en"].blend == pytest.approx(en.blend)
