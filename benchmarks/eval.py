"""Benchmark `evaluate_fire` on the silver FactualCS dev split with two reference baselines.

    PYTHONPATH=src .venv/bin/python benchmarks/eval.py --data-dir ../shared/data [--fsc-items 0]

- `same-category-ref`: for each dev item, the human reply of another random dev item with
  the same gold category (category = gold category): a retrieval-style baseline.
- `template`: one fixed empathetic reply for every item, category `nonfactual`.
Writes benchmarks/results/eval.md with the scores, the t-tests and the time per stage.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import header  # noqa: E402

TEMPLATE = ("Hate speech hurts real people. Everyone deserves to be treated with dignity and "
            "respect, so let's talk about this without insults.")


def build_baselines(data_dir: Path, folder: Path, seed: int = 13) -> tuple[Path, Path, Path]:
    silver = data_dir / "factualcs-silver"
    dev_path = silver / "dev.jsonl"
    dev = [json.loads(line) for line in dev_path.read_text().splitlines() if line]
    # Replies come from *other dev items*: the strategy judge was trained on the train
    # references, so drawing from train would score the judge on its own training data.
    by_category: dict[str, list[tuple[str, str]]] = {}
    for row in dev:
        by_category.setdefault(row["hs_type"], []).append((row["id"], row["counterspeech"]))
    rng = random.Random(seed)
    retrieval, template = folder / "same-category-ref.jsonl", folder / "template.jsonl"
    with retrieval.open("w") as a, template.open("w") as b:
        for row in dev:
            others = [text for item_id, text in by_category[row["hs_type"]] if item_id != row["id"]]
            reply = rng.choice(others)
            a.write(json.dumps({"id": row["id"], "category": row["hs_type"], "counterspeech": reply}) + "\n")
            b.write(json.dumps({"id": row["id"], "category": "nonfactual", "counterspeech": TEMPLATE}) + "\n")
    return dev_path, retrieval, template


def fsc_section(gold: Path, retrieval: Path, folder: Path, limit: int) -> list[str]:
    """FSc with the embedded default chat model on the first `limit` items with evidence."""
    from rebuttal.eval.factuality import LLMFactJudge
    from rebuttal.eval.fire_metrics import Judges, evaluate_fire
    from rebuttal.llm import load_model

    rows = [json.loads(line) for line in gold.read_text().splitlines() if line]
    factual = {r["id"] for r in rows if r.get("evidence")}
    subset = folder / "gold-factual.jsonl"
    chosen = [r for r in rows if r["id"] in factual][:limit]
    subset.write_text("".join(json.dumps(r) + "\n" for r in chosen))
    model = load_model()
    judge = LLMFactJudge(model)
    started = time.perf_counter()
    report = evaluate_fire(retrieval, subset, judges=Judges(fact=judge), metrics=["fsc"])
    seconds = time.perf_counter() - started
    system = report.systems[0]
    labels = [it.fact_label for it in system.items]
    model.close()
    return [f"FSc with {judge.info.name} ({judge.info.version}) on {len(labels)} factual dev items "
            f"of same-category-ref: FSc {system.means['fsc']}, labels "
            f"{ {k: labels.count(k) for k in set(labels)} }, {seconds / max(len(labels), 1):.1f} s per "
            f"judgment, {judge.usage.prompt_tokens + judge.usage.completion_tokens} tokens.", ""]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--fsc-items", type=int, default=0,
                        help="also judge FSc with the embedded chat model on this many factual items")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "eval.md")
    args = parser.parse_args()

    from rebuttal.eval import fire_metrics
    from rebuttal.eval.fire_metrics import Judges, evaluate_fire

    folder = Path(tempfile.mkdtemp(prefix="rebuttal-eval-bench-"))
    gold, retrieval, template = build_baselines(args.data_dir, folder)
    timings = {}
    judges = Judges()
    for group in (["rouge1", "rouge2", "rougeL"], ["meteor"], ["bertscore"], ["cosim"],
                  ["repetition", "diversity", "novelty"], ["toxicity"], ["catacc"]):
        started = time.perf_counter()
        evaluate_fire(retrieval, gold, judges=judges, metrics=group)
        timings["+".join(group)] = time.perf_counter() - started
    started = time.perf_counter()
    report = evaluate_fire(retrieval, gold, compare_path=template, report_dir=folder / "report",
                           judges=judges, metrics=[k for k in fire_metrics.METRIC_KEYS if k != "fsc"])
    total = time.perf_counter() - started
    n = report.gold_items
    lines = header("Evaluation suite benchmark",
                   split=f"silver FactualCS dev ({n} items); two reference baselines built from it (see benchmarks/eval.py)",
                   model="none for the replies (reference baselines); the metrics' own models: "
                         + ", ".join(f"{j.role} {j.name}" for j in report.judges),
                   memory="none")
    lines += [
        "FSc is left out (it needs a chat or NLI judge). Models warm after the first group.", "",
        "| system | " + " | ".join(f"{m.label}{'↑' if m.higher_is_better else '↓'}" for m in report.metrics) + " |",
        "|---|" + "---|" * len(report.metrics),
    ]
    for s in report.systems:
        lines.append(f"| {s.name} | " + " | ".join(
            f"{s.means[m.key]:.3f}" if s.means.get(m.key) is not None else "n/a" for m in report.metrics) + " |")
    lines += ["", "| metric | t | p | better |", "|---|---|---|---|"]
    for t in report.tests:
        lines.append(f"| {t.metric} | {t.t if t.t is None else round(t.t, 2)} | "
                     f"{'n/a' if t.p is None else f'{t.p:.2g}'} | {t.better} |")
    lines += ["", "| stage (one system, first call includes model loading) | seconds |", "|---|---|"]
    lines += [f"| {k} | {v:.1f} |" for k, v in timings.items()]
    lines += [f"| full report, two systems, all metrics but FSc (warm) | {total:.1f} |",
              f"| per item and system (warm) | {total / (2 * n):.3f} |", ""]
    if args.fsc_items:
        lines += fsc_section(gold, retrieval, folder, args.fsc_items)
    lines += ["Judges:", ""] + [f"- {j.role}: {j.name} ({j.version})" for j in report.judges] + [""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    print(f"report: {folder / 'report' / 'report.html'}")


if __name__ == "__main__":
    main()
