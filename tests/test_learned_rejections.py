import json

import numpy as np

from rebuttal.learned.datasets import gate_corpus
from rebuttal.learned.rejections import QUOTING, REFERRING, hateful_claims, rejection_texts


def _state_file(tmp_path, items):
    (tmp_path / "state-toxicn").mkdir()
    (tmp_path / "state-toxicn" / "train.json").write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return tmp_path


ITEMS = [
    {"id": 1, "content": "某群人都很懒，别理他们", "sen_hate": "1",
     "Q1 Target": "某群人", "Q1 Argument": "都很懒", "Q1 hateful": "hate"},
    {"id": 2, "content": "那些人就是垃圾", "sen_hate": "1",  # the argument already names the target
     "Q1 Target": "那些人", "Q1 Argument": "那些人就是垃圾", "Q1 hateful": "hate"},
    {"id": 3, "content": "今天天气很好", "sen_hate": "0",
     "Q1 Target": "天气", "Q1 Argument": "很好", "Q1 hateful": "non-hate"},
    {"id": 4, "content": "长帖", "sen_hate": "1",
     "Q1 Target": "他们", "Q1 Argument": "一" * 40, "Q1 hateful": "hate"},
    {"id": 5, "content": "第二个才是仇恨", "sen_hate": "1",
     "Q1 Target": "你", "Q1 Argument": "说得对", "Q1 hateful": "non-hate",
     "Q2 Target": "外地人", "Q2 Argument": "素质低", "Q2 hateful": "hate"},
    {"id": 6, "content": "送动物园吧 ", "sen_hate": "1",  # an implicit target is written NULL
     "Q1 Target": "NULL", "Q1 Argument": "送动物园吧 ", "Q1 hateful": "hate"},
]


def test_claims_come_from_hateful_posts_only_and_short_spans(tmp_path):
    assert hateful_claims(_state_file(tmp_path, ITEMS)) == [("1", "某群人都很懒"), ("2", "那些人就是垃圾"), ("5", "外地人素质低"),
                                                        ("6", "送动物园吧")]


def test_each_claim_is_framed_once_quoting_and_referring_in_turn(tmp_path):
    rows = rejection_texts(_state_file(tmp_path, ITEMS[:5]))
    texts = [text for _, text in rows]
    assert len(texts) == 3 and sorted(post for post, _ in rows) == ["1", "2", "5"]
    claims = {"某群人都很懒", "那些人就是垃圾", "外地人素质低"}
    assert {next(c for c in claims if c in t) for t in texts} == claims
    quoted = [t for t in texts if any(t == frame.format(claim=c) for frame in QUOTING for c in claims)]
    referred = [t for t in texts if any(t == frame.format(claim=c) for frame in REFERRING for c in claims)]
    assert len(quoted) == 2 and len(referred) == 1  # items 0 and 2 quote, item 1 refers
    assert all("“" in t for t in quoted) and not any("“" in t for t in referred)
    assert rejection_texts(tmp_path) == rows  # fixed seed
    assert len(rejection_texts(tmp_path, limit=2)) == 2


def test_chinese_gate_corpus_adds_the_rejections_as_non_hateful(tmp_path):
    rows = gate_corpus(_state_file(tmp_path, ITEMS), "zh")
    rejections = [r for r in rows if r.source == "state-toxicn-rejections"]
    assert len(rejections) == 4 and not any(r.hateful for r in rejections)
    assert sum(r.hateful for r in rows if r.source == "state-toxicn") == 5


def test_train_gate_keeps_a_language_and_trains_chinese_with_the_rejections(tmp_path):
    from rebuttal.learned import HateGate
    from rebuttal.learned.train import train_gate

    hateful = [{"id": i, "content": f"外地人{i}号素质低，滚出去", "sen_hate": "1",
                "Q1 Target": "外地人", "Q1 Argument": f"{i}号素质低", "Q1 hateful": "hate"} for i in range(30)]
    benign = [{"id": 100 + i, "content": f"今天第{i}天，天气很好", "sen_hate": "0",
               "Q1 Target": "天气", "Q1 Argument": "很好", "Q1 hateful": "non-hate"} for i in range(30)]
    (tmp_path / "data").mkdir()
    root = _state_file(tmp_path / "data", hateful + benign)
    (root / "hatecheck-zh").mkdir()
    cases = [{"test_case": f"{group}{'都是垃圾' if bad else '很友好'}{t}", "label_gold": "hateful" if bad else "non-hateful",
              "functionality": "derog_h" if bad else "ident_nh", "templ_id": t * 2 + bad}
             for t in range(10) for bad in (0, 1) for group in ("女人", "黑人")]
    (root / "hatecheck-zh" / "dev.jsonl").write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in cases),
                                                    encoding="utf-8")
    shipped = HateGate.load()
    gate = train_gate(root, tmp_path / "out", chinese="linear", keep=shipped.only(["en"]))
    assert gate.gates["en"] is shipped.gates["en"] and gate.fallbacks["en"] is shipped.fallbacks["en"]
    from rebuttal.learned.datasets import LabelledText, held_out, real_dev

    posts = {i: LabelledText("", True, "state-toxicn", group=f"post:{i}") for i in [*range(30), *range(100, 130)]}
    trained = [i for i in range(30) if not held_out(posts[i]) and not real_dev(posts[i])]
    assert 15 <= len(trained) < 30  # a held-out or dev post's rejection leaves with it (issue 47's real-post slices)
    assert gate.meta["languages"]["zh"]["sources"]["state-toxicn-rejections"] == len(trained)
    zh = gate.meta["languages"]["zh"]
    held = [i for i in posts if held_out(posts[i])]
    dev = [i for i in posts if real_dev(posts[i])]
    assert len(zh["real_posts"]["scores"]) == len(held) and len(zh["grouped_scores"]) == 40  # scored, never trained on
    assert len(zh["dev_posts"]["scores"]) == len(dev) > 0 and zh["real_fpr_budget"] is None  # a linear gate: HateCheck's cut
    assert "held-out real posts" in (tmp_path / "out" / "gate_card.md").read_text(encoding="utf-8")
    assert "kept from the gate trained" in (tmp_path / "out" / "gate_card.md").read_text(encoding="utf-8")
    reloaded = HateGate.load(tmp_path / "out" / "gate.npz")
    assert np.array_equal(reloaded.gates["en"].coef, shipped.gates["en"].coef)
    (score, _, lang), = reloaded.scores(["外地人99号素质低，滚出去"])
    assert lang == "zh" and score > reloaded.gates["zh"].threshold
    again = train_gate(root, tmp_path / "again", chinese="linear", keep=reloaded.only(["en"]))
    english_trained = shipped.meta["languages"]["en"].get("kept", shipped.meta["trained"])  # the shipped one is kept too
    assert again.meta["languages"]["en"]["kept"] == gate.meta["languages"]["en"]["kept"] == english_trained
