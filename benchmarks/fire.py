"""FIRE on the silver dev split: category policies, latency/RSS vs the retrieval baseline, and
a small quality run against the three baselines. Results: benchmarks/results/fire.md.

    python benchmarks/fire.py policy  --n 50 --memory runs/silver-memory
    python benchmarks/fire.py latency --n 20 --memory runs/silver-memory
    python benchmarks/fire.py quality --n 50 --memory runs/silver-memory [--model qwen2.5-0.5b]
    python benchmarks/fire.py policies --n 20 --memory runs/silver-memory  # from a finished run

Runs go through `rebuttal run`'s batch code into runs/bench/, so an interrupted benchmark
resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "fire.md"
DEV = ROOT.parent / "shared" / "data" / "factualcs-silver" / "dev.jsonl"


def dev_items(path: Path, n: int) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:n]


def subset_file(rows: list[dict], out_dir: Path) -> Path:
    path = out_dir / f"dev_{len(rows)}.jsonl"  # the first n items, so smaller runs are prefixes
    path.write_text("".join(json.dumps({"id": r["id"], "text": r["hate_speech"]}) + "\n" for r in rows))
    return path


def read_results(path: Path, ids: set[str]) -> dict[str, dict]:
    rows = (json.loads(line) for line in path.read_text().splitlines())
    return {row["id"]: row for row in rows if row["id"] in ids}


def category_accuracy(results: dict[str, dict], gold: dict[str, str]) -> float:
    hits = sum(
        1 for item_id, category in gold.items()
        if (results.get(item_id) or {}).get("analysis") and results[item_id]["analysis"]["category"] == category
    )
    return hits / len(gold)


def latency(results: dict[str, dict]) -> list[float]:
    return [sum(s["latency_s"] for s in r["trace"]["steps"]) for r in results.values() if r.get("trace")]


def policy_accuracies(fire: dict[str, dict], gold: dict[str, str]) -> list[str]:
    """The three category policies from one FIRE run: the analyst's trace keeps the model's own
    category, the memory view keeps t̂, and the result's category is the shipped policy's."""
    hits = Counter()
    for item_id, category in gold.items():
        row = fire.get(item_id) or {}
        if not row.get("analysis") or not row.get("memory"):
            continue
        t_hat = row["memory"]["predicted"]
        notes = [n for s in row["trace"]["steps"] if s["stage"] == "analyst" for n in s["notes"]]
        said = next((n.split(": ", 1)[1] for n in notes if n.startswith("model category: ")), t_hat)
        hits["memory t̂ only"] += t_hat == category
        hits["free (the model's own category; `none` counted as t̂)"] += (t_hat if said == "none" else said) == category
        hits["as run (the policy the run used)"] += row["analysis"]["category"] == category
    return [f"| {name} | {count / len(gold):.3f} |" for name, count in hits.items()]


def run_system(system: str, source: Path, out_dir: Path, model, memory_path: str | None, ablations=()) -> dict:
    from rebuttal.fire.batch import run_fire_batch

    name = system + "".join(f"-{a}" for a in ablations)
    out = out_dir / f"{name}.jsonl"
    started = time.perf_counter()
    summary = run_fire_batch(source, out, system=system, ablations=ablations, model=model,
                             memory_path=memory_path, progress=True)
    print(f"{name}: {summary} in {time.perf_counter() - started:.0f}s", flush=True)
    ids = {json.loads(line)["id"] for line in source.read_text().splitlines()}
    return read_results(out, ids)


def policy_run(args, rows, model) -> list[str]:
    """One analyst call per item; the three policies differ only in how its answer is used."""
    from rebuttal.fire.analyst import Analyst, CategoryPolicy, decide_category
    from rebuttal.fire.pipeline import FirePipeline, FireSettings
    from rebuttal.fire.prompting import AnalystOutput
    from rebuttal.llm import StructuredOutputError, generate_object
    from rebuttal.memory import Memory
    from rebuttal.types import Trace

    memory = Memory.load(args.memory) if args.memory else Memory.default()
    pipe = FirePipeline(model, memory, None, FireSettings())
    hits = Counter()
    invalid = nones = 0
    for row in rows:
        view, exemplars, _ = pipe._recall(row["hate_speech"], Trace())
        messages, _ = Analyst(model).messages(row["hate_speech"], exemplars, view)
        gold = row["hs_type"]
        hits["memory t̂ only (no LLM)"] += view.predicted.value == gold
        try:
            output = generate_object(model, messages, AnalystOutput, max_tokens=220).value
        except StructuredOutputError:
            invalid += 1
            output = AnalystOutput(target_group="Others", category=view.predicted.value, reasoning="fallback")
        proposed = output.hate_type or view.predicted  # "none" counts as the memory's category here
        nones += output.hate_type is None
        for policy in CategoryPolicy:
            category, _ = decide_category(proposed, output.override_reason, view, policy)
            hits[f"analyst, policy `{policy.value}`"] += category.value == gold
        print(f"{row['id']}: gold {gold} t̂ {view.predicted.value} model {output.category.value}", flush=True)
    n = len(rows)
    lines = ["| policy | category accuracy |", "|---|---|"]
    lines += [f"| {name} | {count / n:.3f} |" for name, count in hits.items()]
    lines.append(f"\n{invalid} of {n} analyst outputs stayed invalid after the re-ask (fallback to t̂); "
                 f"the analyst called {nones} of {n} posts not hateful (all silver dev posts but a few are hateful).")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["policy", "policies", "latency", "quality", "rss"])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--dev", type=Path, default=DEV)
    parser.add_argument("--memory", help="saved memory folder (default: the shipped exemplar bank)")
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if not args.dev.exists():
        sys.exit(f"needs the silver dev split at {args.dev}")
    from rebuttal.llm import load_model

    rows = dev_items(args.dev, args.n)
    gold = {r["id"]: r["hs_type"] for r in rows}
    # Shared by the modes: the quality run reuses the latency run's items instead of redoing them.
    out_dir = ROOT / "runs" / "bench" / f"{args.model}-{Path(args.memory or 'bank').name}"
    if args.mode == "rss":  # a fresh process that really generates: peak RSS of FIRE + RB
        out_dir = ROOT / "runs" / "bench" / f"rss-{time.strftime('%H%M%S')}"
    out_dir.mkdir(parents=True, exist_ok=True)
    source = subset_file(rows, out_dir)
    model = None if args.mode == "policies" else load_model(model=args.model, threads=args.threads)
    header = (f"## {args.mode} — {args.model}, {args.threads} threads, {len(rows)} silver dev items, "
              f"memory {args.memory or 'shipped bank'} ({platform.machine()}, {time.strftime('%Y-%m-%d')})")
    if args.mode == "policy":
        lines = policy_run(args, rows, model)
    elif args.mode == "policies":  # from an earlier FIRE run's traces, no model needed
        fire = read_results(out_dir / "fire.jsonl", set(gold))
        lines = ["| policy | category accuracy |", "|---|---|", *policy_accuracies(fire, gold), "",
                 "“As run” is the policy of the FIRE run in that folder (`constrained` for the runs "
                 "recorded here, made before `memory` became the default)."]
    elif args.mode == "latency":
        fire = run_system("fire", source, out_dir, model, args.memory)
        rb = run_system("retrieval", source, out_dir, model, args.memory)
        f_lat, r_lat = latency(fire), latency(rb)
        ratio = statistics.mean(f_lat) / statistics.mean(r_lat)
        reused = [sum(s["usage"]["cached_prompt_tokens"] for s in r["trace"]["steps"]) for r in fire.values() if r.get("trace")]
        lines = [
            "| system | mean s/item | median s/item | category accuracy |", "|---|---|---|---|",
            f"| FIRE | {statistics.mean(f_lat):.1f} | {statistics.median(f_lat):.1f} | {category_accuracy(fire, gold):.3f} |",
            f"| retrieval baseline | {statistics.mean(r_lat):.1f} | {statistics.median(r_lat):.1f} | {category_accuracy(rb, gold):.3f} |",
            "",
            f"FIRE/RB latency ratio: **{ratio:.2f}** (target <= 2.0). Peak RSS of the process (model, "
            f"memory, evidence store, both systems): **{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024:.2f} GB** (target < 2.5 GB).",
            f"Prompt tokens reused from the KV cache per FIRE item: mean {statistics.mean(reused):.0f}.",
        ]
    elif args.mode == "rss":
        run_system("fire", source, out_dir, model, args.memory)
        run_system("retrieval", source, out_dir, model, args.memory)
        lines = [f"Peak RSS of one process running FIRE then the retrieval baseline on {len(rows)} items "
                 f"(model, memory, evidence store): **{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024:.2f} GB** (target < 2.5 GB)."]
    else:
        systems = {name: run_system(name, source, out_dir, model, args.memory)
                   for name in ("fire", "zero-shot", "few-shot", "retrieval")}
        lines = ["| system | category accuracy | replies | flagged | errors | not hateful |", "|---|---|---|---|---|---|"]
        for name, results in systems.items():
            statuses = Counter(r["status"] for r in results.values())
            replies = sum(1 for r in results.values() if r.get("reply"))
            lines.append(f"| {name} | {category_accuracy(results, gold):.3f} | {replies} | {statuses['flagged']} | "
                         f"{statuses['error']} | {statuses['not_hateful']} |")
        fire = systems["fire"]
        lines += ["", "Category policies measured on the FIRE run above:", "", "| policy | category accuracy |", "|---|---|"]
        lines += policy_accuracies(fire, gold)
        replies = [r for r in fire.values() if r.get("reply")]
        passed = [r for r in replies if "reply_check_failed" not in r["trace"]["flags"]]
        factual = [r for r in replies if r["evidence"]]
        citing = [r for r in factual if r["reply"]["cited_evidence_ids"]]
        lines += [
            "",
            f"FIRE reply checks (citations only of retrieved evidence, no restated claim): "
            f"{len(passed)}/{len(replies)} passed ({len(passed) / max(1, len(replies)):.1%}).",
            f"FIRE replies with evidence that cite at least one item: {len(citing)}/{len(factual)}.",
        ]
    text = header + "\n\n" + "\n".join(lines) + "\n"
    print(text)
    previous = RESULTS.read_text() if RESULTS.exists() else "# FIRE benchmarks\n\nProduced by `python benchmarks/fire.py MODE`.\n"
    sections = [s for s in previous.split("\n## ") if not s.startswith(f"{args.mode} —")]
    RESULTS.write_text("\n## ".join(sections).rstrip() + "\n\n" + text)


if __name__ == "__main__":
    main()
