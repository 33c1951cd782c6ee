"""FIRE's drafts on silver dev against the single-call baselines: checks, latency, category, and
a blind grade with the reply rubric. Results: benchmarks/results/fire.md (written whole).

    python benchmarks/fire.py run --n 106 --graded 40      # resumable; FIRE on n, baselines on the graded items
    python benchmarks/fire.py sheet --n 106 --graded 40     # grading sheet: shuffled, systems hidden
    python benchmarks/fire.py report --n 106 --graded 40    # fire.md from the runs (+ grades, if present)

`--compare-drafts` runs and reports FIRE with best of two on (not the default) into
runs/bench/fire-dev/fire-compare.jsonl and benchmarks/results/fire_best_of_two.md.

Runs go through `rebuttal run`'s batch code into runs/bench/, so an interrupted run resumes.
Grades are read from benchmarks/grades/fire-dev.jsonl ({"key", "verdict", "why"}), written by
the grader from the sheet; the key maps back to the system only here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
GRADES = ROOT / "benchmarks" / "grades" / "fire-dev.jsonl"
DEV = ROOT.parent / "shared" / "data" / "factualcs-silver" / "dev.jsonl"
OUT = ROOT / "runs" / "bench" / "fire-dev"
BASELINES = ("zero-shot", "retrieval")
VERDICTS = ("usable", "fixable", "unusable", "harmful")


def dev_rows(n: int) -> list[dict]:
    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:n]


def source_file(rows: list[dict], name: str) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "text": r["hate_speech"]}) + "\n" for r in rows))
    return path


def results(system: str, ids: list[str]) -> dict[str, dict]:
    path = OUT / f"{system}.jsonl"
    if not path.exists():
        return {}
    rows = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("id") in ids:
            rows[row["id"]] = row
    return rows


def fire_rows(args) -> str:
    """The file FIRE's rows go to: best of two (not the default) keeps its own."""
    return "fire-compare" if args.compare_drafts else "fire"


def run(args) -> None:
    from rebuttal.fire.batch import run_fire_batch
    from rebuttal.llm import ModelSettings, load_model

    model = load_model(ModelSettings.of(model=args.model, threads=args.threads))
    rows = dev_rows(args.n)
    graded = source_file(rows[: args.graded], f"dev_{args.graded}")
    # FIRE first on the graded items, then the baselines on the same items, then FIRE on the rest.
    fire_out, settings = OUT / f"{fire_rows(args)}.jsonl", {"compare_drafts": args.compare_drafts}
    run_fire_batch(graded, fire_out, system="fire", model=model, **settings)
    for system in BASELINES:
        run_fire_batch(graded, OUT / f"{system}.jsonl", system=system, model=model)
    run_fire_batch(source_file(rows, f"dev_{args.n}"), fire_out, system="fire", model=model, **settings)


def blind_key(system: str, item_id: str, reply: str) -> str:
    """Bound to the reply's text: a grade carries over to a rerun only if the text is unchanged."""
    return hashlib.sha256(f"{system}:{item_id}:{reply}".encode()).hexdigest()[:10]


def load_grades() -> dict[str, dict]:
    if not GRADES.exists():
        return {}
    return {g["key"]: g for g in map(json.loads, GRADES.read_text().splitlines()) if g}


def sheet(args) -> None:
    """Every reply without a grade yet (FIRE's on all n items, the baselines' on the graded ones),
    shuffled, with only a key to tell them apart."""
    rows = dev_rows(args.n)
    ids = [r["id"] for r in rows]
    posts = {r["id"]: r["hate_speech"] for r in rows}
    graded = load_grades()
    entries = []
    for system in ("fire", *BASELINES):
        for item_id, row in results(fire_rows(args) if system == "fire" else system,
                                    ids if system == "fire" else ids[: args.graded]).items():
            if row.get("reply"):
                key = blind_key(system, item_id, row["reply"]["text"])
                if key not in graded:
                    entries.append({"key": key, "post": posts[item_id], "reply": row["reply"]["text"]})
    random.Random(7).shuffle(entries)
    path = OUT / "blind_sheet.jsonl"
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries))
    print(f"{len(entries)} replies without a grade -> {path}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def latency(row: dict) -> float:
    return sum(step["latency_s"] for step in row["trace"]["steps"])


def judged_checks(rows: dict[str, dict]) -> dict[str, list]:
    """Every system's final reply through the same checks (MiniLM relevance included)."""
    from rebuttal.fire.generator import DraftJudge
    from rebuttal.llm.embeddings import load_minilm
    from rebuttal.types import EvidenceItem

    judge = DraftJudge(load_minilm())
    out = {}
    for item_id, row in rows.items():
        if row.get("reply"):
            evidence = [EvidenceItem(**e) for e in row.get("evidence") or []]
            out[item_id] = judge.judge(row["reply"]["text"], row["text"], evidence, [], None, False)
    return out


def first_draft_failures(rows: dict[str, dict]) -> Counter:
    counts: Counter = Counter()
    for row in rows.values():
        notes = [n for s in row["trace"]["steps"] if s["stage"] == "generator" for n in s["notes"]]
        first = next((n for n in notes if n.startswith(("draft 1: failed ", "draft 1: all checks"))), "")
        if first.startswith("draft 1: failed "):
            counts.update(first.removeprefix("draft 1: failed ").split(", "))
    return counts


def system_table(systems: dict[str, dict[str, dict]], gold: dict[str, str]) -> list[str]:
    lines = ["| system | items | replies | status ok | flagged | not hateful | errors | all checks pass (same judge) "
             "| category acc. | p50 s | p90 s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, rows in systems.items():
        statuses = Counter(r["status"] for r in rows.values())
        checks = judged_checks(rows)
        passing = sum(all(c.passed for c in cs) for cs in checks.values())
        correct = sum(1 for i, r in rows.items() if r.get("analysis") and r["analysis"]["category"] == gold[i])
        times = [latency(r) for r in rows.values() if r.get("trace")]
        lines.append(f"| {name} | {len(rows)} | {len(checks)} | {statuses['ok']} | {statuses['flagged']} | "
                     f"{statuses['not_hateful']} | {statuses['error']} | {passing}/{len(checks)} | "
                     f"{correct / max(1, len(rows)):.3f} | {percentile(times, 0.5):.1f} | {percentile(times, 0.9):.1f} |")
    return lines


def check_table(fire: dict[str, dict]) -> list[str]:
    from rebuttal.fire.checks import CHECKS

    replies = [r for r in fire.values() if r.get("reply")]
    before = first_draft_failures(fire)
    lines = ["| check | first draft failed | kept draft failed |", "|---|---|---|"]
    for name in CHECKS:
        after = sum(1 for r in replies if any(c["name"] == name and not c["passed"] for c in r["reply"]["checks"]))
        lines.append(f"| {name} | {before[name]}/{len(replies)} | {after}/{len(replies)} |")
    return lines


def grade_table(systems: dict[str, dict[str, dict]], system: str | None = None) -> list[str]:
    """One row per entry; `system` names the system whose grades all entries use (rows that are
    parts of one system's run), else each entry's name does."""
    grades = load_grades()
    if not grades:
        return ["No grades yet (benchmarks/grades/fire-dev.jsonl is absent)."]
    lines = ["| system | graded | " + " | ".join(VERDICTS) + " | usable share | usable per post (no reply = not usable) "
             "| usable among status ok | off-topic or contradicting with status ok |",
             "|---|---|" + "---|" * (len(VERDICTS) + 4)]
    for name, rows in systems.items():
        keys = {i: blind_key(system or name, i, r["reply"]["text"]) for i, r in rows.items() if r.get("reply")}
        graded = {i: grades[k] for i, k in keys.items() if k in grades}
        verdicts = Counter(g["verdict"] for g in graded.values())
        ok = {i: g for i, g in graded.items() if rows[i]["status"] == "ok"}
        ok_usable = sum(g["verdict"] == "usable" for g in ok.values())
        bad_ok = sum(any(w in g.get("why", "") for w in ("off-topic", "contradict")) for g in ok.values())
        lines.append(f"| {name} | {len(graded)} | " + " | ".join(str(verdicts[v]) for v in VERDICTS)
                     + f" | {verdicts['usable'] / max(1, len(graded)):.0%} | {verdicts['usable']}/{len(rows)} "
                     f"| {ok_usable}/{len(ok)} | {bad_ok} |")
    return lines


def adapt_coverage(rows: list[dict]) -> list[str]:
    """How often adapting a human reply could apply: dev posts with a shipped-bank record whose
    post is close in plain MiniLM space (topic, not the SupCon head's category space)."""
    from rebuttal.llm.embeddings import load_minilm
    from rebuttal.memory.records import load_bank

    encoder = load_minilm()
    bank = [r for r in load_bank() if r.is_hateful and r.counterspeech]
    closest = (encoder.encode([r["hate_speech"] for r in rows]) @ encoder.encode([r.hate_speech for r in bank]).T).max(1)
    cells = " | ".join(f"{int((closest >= t).sum())}/{len(rows)}" for t in (0.6, 0.7, 0.8))
    return ["| bank records with a human reply | posts with one at cosine >= 0.6 | >= 0.7 | >= 0.8 |",
            "|---|---|---|---|", f"| {len(bank)} | {cells} |"]


def report(args) -> None:
    rows = dev_rows(args.n)
    gold = {r["id"]: r["hs_type"] for r in rows}
    graded_ids = [r["id"] for r in rows[: args.graded]]
    fire_all = results(fire_rows(args), list(gold))
    defaults = "shipped defaults" + (" + best of two (`--compare-drafts`; not the default)" if args.compare_drafts else "")
    same_items = {"fire": {i: r for i, r in fire_all.items() if i in graded_ids},
                  **{s: results(s, graded_ids) for s in BASELINES}}
    f50 = percentile([latency(r) for r in same_items["fire"].values()], 0.5)
    r50 = percentile([latency(r) for r in same_items["retrieval"].values()], 0.5)
    lines = header("FIRE drafts on silver dev", split=f"silver dev round 1 (first {args.n} items for FIRE; the first "
                   f"{args.graded} for the baselines and the blind grade); settings were chosen on dev and on train "
                   "cross-validation, so these are dev numbers, not test numbers",
                   model=f"{args.model} (embedded GGUF, llama.cpp, {args.threads} threads)",
                   memory=f"{defaults}: exemplar bank + shipped SupCon head; shipped category model and hate gate")
    lines += [f"## All FIRE items ({defaults})", "", *system_table({"fire": fire_all}, gold), "",
              "Graded with the reply rubric by the grader described below (the drafts beyond the first "
              f"{args.graded} were graded knowing they were FIRE's). The draft checks were developed by reading "
              f"FIRE's drafts on the first {args.graded} posts, so the other posts show how they carry over:", "",
              *grade_table({f"fire, all {len(fire_all)}": fire_all,
                            f"fire, first {args.graded}": {i: r for i, r in fire_all.items() if i in graded_ids},
                            f"fire, the other {len(fire_all) - len(graded_ids)}":
                                {i: r for i, r in fire_all.items() if i not in graded_ids}}, system="fire"), "",
              "## FIRE's draft checks: first draft vs the kept draft", "", *check_table(fire_all), "",
              f"## Same {args.graded} items: FIRE vs single-call baselines (same machine)", "",
              *system_table(same_items, gold), "",
              "Each system's rows come from its latest run; `fire.py run` reruns only what is missing, so the "
              "systems may have run on different days beside different jobs: the latencies compare loosely.", "",
              f"Median latency FIRE / retrieval baseline: **{f50 / r50:.2f}** (target <= 1.5).", "",
              "## Blind grade with the reply rubric (shared/docs/reply-rubric.md)", "",
              "Grader: the developer, an AI coding agent, reading each post and reply from a shuffled sheet "
              "that hides the system (`python benchmarks/fire.py sheet`); no larger model was available. "
              "Not an independent human judgement. When only one system's replies changed since the last "
              "grade (FIRE's, after each change to it), the sheet holds only that system's, so the grader knew "
              "which system it was grading; FIRE variants tried on dev were graded batch by batch as their runs "
              "finished, so the grader also knew the variant. A grade is bound to the reply's text "
              "(benchmarks/grades/fire-dev.jsonl), so a rerun that writes the same text keeps its grade and "
              "a changed text is graded afresh.", "", *grade_table(same_items), "",
              "## Adapting a human reply: how often the shipped bank has one close enough", "",
              "`adapt` (FIRE adapts the nearest human reply instead of writing freely) is off by default: "
              "with the shipped bank few dev posts have a topically close record, so it could rarely apply.", "",
              *adapt_coverage(rows), ""]
    (RESULTS / ("fire_best_of_two.md" if args.compare_drafts else "fire.md")).write_text("\n".join(lines) + "\n",
                                                                                       encoding="utf-8")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "sheet", "report"])
    parser.add_argument("--n", type=int, default=106)
    parser.add_argument("--graded", type=int, default=40)
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compare-drafts", action="store_true", help="FIRE with best of two (not the default)")
    args = parser.parse_args()
    if not DEV.exists():
        sys.exit(f"needs the silver dev split at {DEV}")
    {"run": run, "sheet": sheet, "report": report}[args.mode](args)


if __name__ == "__main__":
    main()
