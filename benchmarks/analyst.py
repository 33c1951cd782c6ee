"""The learned analyst on silver dev: category accuracy and macro-F1 of the shipped bank's kNN
vote, a memory built from silver train, each learned model, and (when its run exists) FIRE end
to end with the shipped defaults. Results: benchmarks/results/analyst.md (written whole).

    python benchmarks/analyst.py

Every learned model here is trained on silver train (both rounds) with settings chosen by
cross-validation on train; the numbers below are on dev, which no setting was tuned on.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SILVER = ROOT.parent / "shared" / "data" / "factualcs-silver"
RESULTS = ROOT / "benchmarks" / "results" / "analyst.md"
FIRE_RUN = ROOT / "runs" / "bench" / "fire-dev" / "fire.jsonl"
STATES_NOTE = (" and the chat model's pooled states (the hate gate's: FIRE reads them once per post for both, "
               "~0.35 s; read here from the states cache)")


def macro_f1(gold: list, predicted: list) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score([g.value for g in gold], [p.value for p in predicted], average="macro"))


def row(name: str, gold: list, predicted: list, note: str = "") -> str:
    accuracy = float(np.mean([g == p for g, p in zip(gold, predicted)]))
    return f"| {name} | {len(gold)} | {accuracy:.3f} | {macro_f1(gold, predicted):.3f} | {note} |"


def main() -> None:
    from rebuttal.memory.records import load_records
    from rebuttal.learned.category import CategoryModel, train_category_model
    from rebuttal.learned.train import cached_pooled_states
    from rebuttal.llm.embeddings import load_minilm
    from rebuttal.memory import Memory
    from rebuttal.memory.encoders import load_encoder

    if not SILVER.exists():
        sys.exit(f"needs the silver set at {SILVER}")
    train = [r for f in ("train.jsonl", "train_round2.jsonl") for r in load_records(SILVER / f) if r.is_hateful]
    dev1 = [r for r in load_records(SILVER / "dev.jsonl") if r.is_hateful]
    dev2 = [r for r in load_records(SILVER / "dev_round2.jsonl") if r.is_hateful]
    minilm = load_minilm()
    train_texts = [r.hate_speech for r in train]
    train_vectors = minilm.encode(train_texts)
    shipped = CategoryModel.load()
    bank = Memory.default()
    silver_memory = Memory.build(train, load_encoder("base"))
    vector_only = train_category_model(train_texts, train_vectors, [r.category for r in train])
    lines = header("Learned analyst: category on silver dev", split="silver train (both rounds, hateful records) "
                   "for training and cross-validated choices; silver dev round 1 (106) and both rounds (422) "
                   "for these numbers", model="none (the learned parts only; FIRE end to end is in the last row "
                   "when runs/bench/fire-dev/fire.jsonl exists)",
                   memory="shipped bank + shipped SupCon head; silver-train memory with plain MiniLM")
    lines += ["| system | items | accuracy | macro-F1 | note |", "|---|---|---|---|---|"]
    for split_name, dev in (("dev round 1", dev1), ("dev both rounds", dev1 + dev2)):
        texts, gold = [r.hate_speech for r in dev], [r.category for r in dev]
        vectors = minilm.encode(texts)
        queries = bank.query_batch(texts)
        scores = [q.scores for q in queries] if shipped.uses_memory else None
        states = cached_pooled_states(shipped.states.spec, texts) if shipped.states is not None else None
        started = time.perf_counter()
        learned = shipped.predict(texts, vectors, scores, states)
        per_post_ms = 1000 * (time.perf_counter() - started) / len(texts)
        text_alone = shipped.predict(texts, vectors, scores) if states is not None else None
        lines += [
            row(f"{split_name}: shipped bank kNN t̂ (210 records)", gold, [q.predicted for q in queries]),
            row(f"{split_name}: silver-train memory kNN t̂", gold, [q.predicted for q in silver_memory.query_batch(texts)]),
            row(f"{split_name}: LR on MiniLM + n-grams, no memory", gold, [p[0] for p in vector_only.predict(texts, vectors)]),
            row(f"{split_name}: **shipped category model**", gold, [p[0] for p in learned],
                f"{per_post_ms:.1f} ms/post after encoding{STATES_NOTE if states is not None else ''}; "
                f"memory features: {shipped.uses_memory}"),
        ]
        if text_alone is not None:
            lines.append(row(f"{split_name}: shipped model's text part alone (its fallback without the embedded "
                             "model)", gold, [p[0] for p in text_alone]))
            lines.append(band_row(f"{split_name}, text part alone", gold, text_alone, shipped.ambiguous_cut(False)))
        lines.append(band_row(split_name, gold, learned, shipped.ambiguous_cut(states is not None)))
    lines += ["", assessor_row(dev1), "", fire_row(dev1), "",
              f"Out-of-fold accuracy on train of the shipped model: {shipped.meta['out_of_fold_accuracy']:.3f}; "
              f"variants: {json.dumps(shipped.meta.get('variants_out_of_fold', {}))}.", ""]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def band_row(split_name: str, gold, learned, cut: float) -> str:
    confident = [(g == p[0]) for g, p in zip(gold, learned) if p[1] >= cut]
    unsure = [(g == p[0]) for g, p in zip(gold, learned) if p[1] < cut]
    return (f"| {split_name}: confidence bands (cut {cut:.2f}) | {len(gold)} | ≥ cut: {np.mean(confident):.3f} "
            f"({len(confident)}) / < cut: {np.mean(unsure) if unsure else float('nan'):.3f} ({len(unsure)}) | | "
            "the band must separate accurate from inaccurate items |")


def assessor_row(dev1) -> str:
    """FIRE's category as it ships: the assessor's (under the default `learned` policy the LLM
    explains that category and cannot change it), through the code path FIRE runs per post."""
    from rebuttal.fire.assessor import Assessor
    from rebuttal.fire.factory import _learned
    from rebuttal.memory import Memory
    from rebuttal.types import Trace

    encoder, category_model, gate, _ = _learned(None, None, None)
    assessor = Assessor(encoder, Memory.default(), category_model, gate)
    assessor.assess("a first post opens the chat model's reader", Trace())  # not timed: loading, once
    started = time.perf_counter()
    assessed = [assessor.assess(r.hate_speech, Trace()) for r in dev1]
    seconds = (time.perf_counter() - started) / len(dev1)
    hits = sum(a.category == r.category for a, r in zip(assessed, dev1))
    passed = sum(bool(a.hateful) for a in assessed)
    fallbacks = sum(a.category_fallback for a in assessed)
    return (f"FIRE's assessor with the shipped defaults (MiniLM, bank, category model, gate; one post at a time, "
            f"{seconds:.2f} s a post with the gate's forward pass): category accuracy {hits / len(dev1):.3f} on "
            f"{len(dev1)} dev round-1 hateful items, {fallbacks} category fallbacks; the gate passes {passed} (the LLM's "
            "stance vote is not asked here). Under "
            "the default `learned` policy this is FIRE's category on every post it answers.")


def fire_row(dev1) -> str:
    if not FIRE_RUN.exists():
        return "FIRE end to end: no run yet (python benchmarks/fire.py run)."
    gold = {r.id: r.category.value for r in dev1}
    rows = [json.loads(line) for line in FIRE_RUN.read_text().splitlines()]
    rows = [r for r in rows if r.get("id") in gold and r.get("analysis")]
    hits = sum(r["analysis"]["category"] == gold[r["id"]] for r in rows)
    no_reply = sum(r["status"] == "not_hateful" for r in rows)
    written = time.strftime("%Y-%m-%d", time.gmtime(FIRE_RUN.stat().st_mtime))
    return (f"FIRE end to end on the embedded 1.5B (runs/bench/fire-dev, last written {written}, with the category "
            "model shipped then; compare its date with the category model card's): category "
            f"accuracy {hits / max(1, len(rows)):.3f} on {len(rows)} dev round-1 hateful items; {no_reply} of them "
            "got no reply because the gate or the LLM called them not hateful.")


if __name__ == "__main__":
    main()
