"""FIRE's drafts on silver dev against the single-call baselines: checks, latency, category, and
blind grades with the reply rubric. Results: benchmarks/results/fire.md (written whole).

    python benchmarks/fire.py run --n 106 --graded 106      # resumable; FIRE on n, baselines and options on the graded items
    python benchmarks/fire.py latency --n 12                # FIRE, its option form and the baselines in turn on each item
    python benchmarks/fire.py sheet --grader independent     # grading sheet: shuffled, systems hidden
    python benchmarks/fire.py report --n 106 --graded 106   # fire.md from the runs (+ grades, if present)

`run` also writes FIRE's replies on the graded items again in the option form (reply_form=draft_baseline,
on the stored analyses: runs/bench/fire-dev/fire-draft-baseline.jsonl; `latency` times it as it ships) and
adapting the nearest human reply of a memory of silver train (adapt=True: fire-adapt-silver.jsonl).
`--compare-drafts` runs and reports FIRE with best of two on (not the default) into
runs/bench/fire-dev/fire-compare.jsonl and benchmarks/results/fire_best_of_two.md.

Runs go through `rebuttal run`'s batch code into runs/bench/, so an interrupted run resumes.
Grades are read from benchmarks/grades/ (fire_grading.py), one file per grader.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fire_adapt import adapt_section  # noqa: E402
from fire_grading import GRADER_BRIEF, GRADERS, GRADES, grade_table, regrade_agreement, write_sheet  # noqa: E402
from fire_rows import (ADAPT_ROWS, OPTION_FORM, OPTION_ROWS, SILVER, adapt_label, archive, drafted_by,  # noqa: E402
                       latency, only, option_label, percentile, rechecked, redraft_into,
                       restore, results, silver_memory, system_table)
from fire_stale import drop_gate_changed  # noqa: E402
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DEV = SILVER / "dev.jsonl"
OUT = ROOT / "runs" / "bench" / "fire-dev"
BASELINES = ("zero-shot", "retrieval")
LATENCY = ROOT / "runs" / "bench" / "fire-latency"
DEV_REPLIES = "fire-dev-replies.jsonl"  # every graded reply's text (the draft score trains on it)
# The draft checks were first developed by reading FIRE's drafts on the first 40 dev items; those
# added on 2026-12-02 were read off an earlier run's drafts on all 106 (see the report's text).
DEVELOPED_ON = 40


def dev_rows(n: int) -> list[dict]:
    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:n]


def source_file(rows: list[dict], name: str) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "text": r["hate_speech"]}) + "\n" for r in rows))
    return path


def fire_rows(args) -> str:
    """The file FIRE's rows go to: best of two (not the default) keeps its own."""
    return "fire-compare" if args.compare_drafts else "fire"


def run(args) -> None:
    from rebuttal.fire.batch import run_fire_batch
    from rebuttal.llm import ModelSettings, load_model

    model = load_model(ModelSettings.of(model=args.model, threads=args.threads))
    rows = dev_rows(args.n)
    graded = source_file(rows[: args.graded], f"dev_{args.graded}")
    # FIRE first on the graded items, then its option form on the same analyses (the default's
    # closest rival), the baselines on the same items, FIRE on the rest, and adapting last.
    fire_out, settings = OUT / f"{fire_rows(args)}.jsonl", {"compare_drafts": args.compare_drafts}
    graded_ids = [r["id"] for r in rows[: args.graded]]
    print(f"{drop_gate_changed(fire_out)} rows whose gate decision today's gate changes are run again")
    run_fire_batch(graded, fire_out, system="fire", model=model, **settings)
    if not args.compare_drafts:
        redraft_into(fire_out, OUT / f"{OPTION_ROWS}.jsonl", graded_ids, model, reply_form=OPTION_FORM)
    for system in BASELINES:
        run_fire_batch(graded, OUT / f"{system}.jsonl", system=system, model=model)
    run_fire_batch(source_file(rows, f"dev_{args.n}"), fire_out, system="fire", model=model, **settings)
    if not args.compare_drafts:
        redraft_into(fire_out, OUT / f"{ADAPT_ROWS}.jsonl", graded_ids, model, adapt=True,
                     memory_path=str(silver_memory(OUT / "silver-memory")))


# The interleaved latency run's systems: row file -> (system, settings). FIRE's option form runs
# whole here (analyst included), as it would ship.
TIMED = {"fire": ("fire", {}), OPTION_ROWS: ("fire", {"reply_form": OPTION_FORM}),
         **{s: (s, {}) for s in BASELINES}}


def run_latency(args) -> None:
    """FIRE, its option form and the two baselines in turn on each item, in one process: the same
    items, the same run and the same neighbours on the machine, so their latencies compare (`run`
    runs each system over all items in a row, and resumes across days)."""
    from rebuttal.fire.batch import run_fire_batch
    from rebuttal.llm import ModelSettings, load_model

    model = load_model(ModelSettings.of(model=args.model, threads=args.threads))
    LATENCY.mkdir(parents=True, exist_ok=True)
    for row in dev_rows(args.n):
        item = LATENCY / "item.jsonl"
        item.write_text(json.dumps({"id": row["id"], "text": row["hate_speech"]}) + "\n")
        for name, (system, settings) in TIMED.items():
            run_fire_batch(item, LATENCY / f"{name}.jsonl", system=system, model=model, progress=False, **settings)


def median_table(systems: dict[str, dict[str, dict]], common: set[str], intro: str) -> list[str]:
    """p50/p90 seconds of each system over the same items, and FIRE's median over the retrieval baseline's."""
    median = {s: percentile([latency(rows[i]) for i in common], 0.5) for s, rows in systems.items()}
    lines = [intro, "", "| system | items | p50 s | p90 s |", "|---|---|---|---|"]
    for name, rows in systems.items():
        times = [latency(rows[i]) for i in common]
        lines.append(f"| {timed_label(name)} | {len(common)} | {median[name]:.1f} | {percentile(times, 0.9):.1f} |")
    return lines + [""] + [f"Median latency {timed_label(name)} / retrieval baseline: "
                           f"**{median[name] / median['retrieval']:.2f}** (target <= 1.5)."
                           for name in systems if name.startswith("fire")]


def timed_label(name: str) -> str:
    return f"fire, option reply_form={OPTION_FORM}" if name == OPTION_ROWS else name


def answered(systems: dict[str, dict[str, dict]]) -> set[str]:
    """The posts every system replied to: FIRE's posts without a reply cost it under a second."""
    return set.intersection(*({i for i, r in rows.items() if r.get("reply")} for rows in systems.values()))


def latency_table(ids: list[str], same_items: dict[str, dict[str, dict]]) -> list[str]:
    """From the interleaved run if there is one; otherwise from the main runs, which may come from
    different days and machines."""
    systems = {name: results(name, ids, LATENCY) for name in TIMED}
    if common := answered(systems):
        ran = len(systems["fire"])
        return median_table(systems, common, f"FIRE, its option form and the baselines in turn on each of the first "
                            f"{ran} dev items, in one process (`fire.py latency --n {ran}`), over the {len(common)} "
                            f"posts every system answered (FIRE's generator prompt there: "
                            f"{drafted_by(systems['fire'])}); seconds of model and pipeline time per post:")
    if not (common := answered(same_items)):
        return ["No latency comparison yet (`python benchmarks/fire.py latency`)."]
    return median_table(same_items, common, "No interleaved run yet (`python benchmarks/fire.py latency`); the "
                        f"medians below are from the main runs over the {len(common)} posts every system answered, "
                        "which may come from different days and machines:")


def sheet(args) -> None:
    """The replies `--grader` has not graded yet, shuffled together: FIRE's on all n items, the
    baselines' on the graded ones."""
    rows = dev_rows(args.n)
    ids = [r["id"] for r in rows]
    systems = [("fire", results(fire_rows(args), ids, OUT)), *((s, results(s, ids[: args.graded], OUT)) for s in BASELINES),
               *(("fire", results(name, ids[: args.graded], OUT)) for name in (OPTION_ROWS, ADAPT_ROWS))]  # FIRE too
    path = OUT / f"blind_sheet-{args.grader}.jsonl"
    count = write_sheet(systems, {r["id"]: r["hate_speech"] for r in rows}, args.grader, path, GRADES / DEV_REPLIES)
    print(f"{count} replies without a grade from {args.grader} -> {path}")


def first_draft_failures(rows: dict[str, dict]) -> Counter:
    counts: Counter = Counter()
    for row in rows.values():
        notes = [n for s in row["trace"]["steps"] if s["stage"] == "generator" for n in s["notes"]]
        first = next((n for n in notes if n.startswith(("draft 1: failed ", "draft 1: all checks"))), "")
        if first.startswith("draft 1: failed "):
            counts.update(first.removeprefix("draft 1: failed ").split(", "))
    return counts


def check_table(fire: dict[str, dict]) -> list[str]:
    from rebuttal.fire.checks import CHECKS

    replies = [r for r in fire.values() if r.get("reply")]
    before = first_draft_failures(fire)
    lines = ["| check | first draft failed | kept draft failed |", "|---|---|---|"]
    for name in CHECKS:
        after = sum(1 for r in replies if any(c["name"] == name and not c["passed"] for c in r["reply"]["checks"]))
        lines.append(f"| {name} | {before[name]}/{len(replies)} | {after}/{len(replies)} |")
    return lines


STATUS_NOTE = (
    "Every system's status is re-read with today's text checks and the shipped draft score (an ok reply that fails a "
    "check added since its run, or scores below the draft score's cut, counts as flagged), so ok means the same checks "
    "for every system. The draft score was trained on the blind grades of these same dev replies "
    "(rebuttal/learned/data/draft_score_card.md), so its effect on ok here is in-sample; "
    "benchmarks/results/fire_heldout.md measures it on posts it never saw. Each system's rows come from its latest "
    "run; `fire.py run` reruns only what is missing (and the rows the gate stopped that today's recalibrated gate "
    "would pass; a rerun of the others would mostly write the same text, as the pipeline decodes greedily, but not "
    "always: llama.cpp's greedy output can change with what its cache held), so these latencies may come from "
    "different days beside different jobs. The latency target is read from the section below.")
GRADER_NOTE = (
    "Grader: fresh instances of an AI agent that had not seen the code, the checks or any other grade, each given the "
    f"rubric, the brief in benchmarks/grades/{GRADER_BRIEF} and one shuffled part of a sheet with the systems hidden "
    "(`python benchmarks/fire.py sheet --grader independent`, split by benchmarks/grade_sheets.py with earlier-graded "
    "anchors mixed in); no larger model or human grader was available. Sheets were graded as runs finished, so one "
    "sheet mostly held one or two systems' replies; a reply whose text is unchanged keeps its grade from an earlier "
    f"run. The draft checks were first developed by reading FIRE's drafts on the first {DEVELOPED_ON} items; the "
    "checks added on 2026-12-02 (sources, unsaid labels, substance, sweeping praise and more concession/contradiction "
    "patterns) were read off an earlier run's drafts on all 106 round-1 dev items (other texts for the same posts), "
    "so the split below no longer holds posts out from check development: it only shows where the first checks came "
    "from.")


def report(args) -> None:
    rows = dev_rows(args.n)
    gold = {r["id"]: r["hs_type"] for r in rows}
    ids = list(gold)
    graded_ids, developed = ids[: args.graded], set(ids[:DEVELOPED_ON])
    fire_all = rechecked(results(fire_rows(args), ids, OUT))
    defaults = "shipped defaults" + (" + best of two (`--compare-drafts`; not the default)" if args.compare_drafts else "")
    same_items = {"fire": only(fire_all, graded_ids), **{s: rechecked(results(s, graded_ids, OUT)) for s in BASELINES}}
    option = rechecked(results(OPTION_ROWS, graded_ids, OUT))
    adapted = rechecked(results(ADAPT_ROWS, graded_ids, OUT))
    forms = [(option_label(option, fire_all), "fire", option)] if option else []
    forms += [(adapt_label(adapted, fire_all), "fire", adapted)] if adapted else []
    # FIRE over all its items, the baselines over theirs, each on the posts the checks were built on and the rest
    parts = ((f"first {DEVELOPED_ON}", developed), (f"the other {len(ids) - DEVELOPED_ON}", set(ids) - developed))
    split = [(f"{name}, {part}", name, part_rows)
             for name, system_rows in {**same_items, "fire": fire_all}.items() for part, chosen in parts
             if (part_rows := only(system_rows, chosen))]
    lines = header("FIRE drafts on silver dev", split=f"silver dev round 1 (first {args.n} items for FIRE, the first "
                   f"{args.graded} for the baselines); settings were chosen on dev and on train cross-validation, so "
                   "these are dev numbers, not test numbers",
                   model=f"{args.model} (embedded GGUF, llama.cpp, {args.threads} threads)",
                   memory=f"{defaults}: exemplar bank + shipped SupCon head; shipped category model, hate gate and draft score")
    lines += [f"## All FIRE items ({defaults})", "", *system_table({"fire": fire_all}, gold), "",
              f"FIRE's replies here were drafted with {drafted_by(fire_all)}. The option form's rows "
              f"(reply_form={OPTION_FORM}) are FIRE's rows on the graded items with the reply written again on "
              "the stored analysis and evidence (`fire.py run`, FirePipeline.redraft): their latency is the stored "
              "stages' plus the new generator step's, which starts without the analyst's prompt in llama.cpp's "
              "cache; the interleaved latency run below measures it as it ships.", "",
              "## FIRE's draft checks: first draft vs the kept draft", "", *check_table(fire_all), "",
              f"## Same {len(graded_ids)} items: FIRE vs single-call baselines", "",
              *system_table({**same_items, **{label: rows for label, _, rows in forms}}, gold), "",
              STATUS_NOTE, "",
              "## Latency: FIRE, its option form and the baselines in turn on the same items", "",
              *(["Not measured with best of two."] if args.compare_drafts else latency_table(ids, same_items)), "",
              "## Blind grade by an independent grader (shared/docs/reply-rubric.md)", "",
              GRADER_NOTE, "",
              *grade_table([(name, name, system_rows) for name, system_rows in same_items.items()] + forms,
                           "independent"),
              "", regrade_agreement("independent"),
              "", *grade_table(split, "independent"), "",
              f"FIRE on all {args.n} items, `ok` with and without the draft score (in-sample: it was trained on "
              "these grades; out of sample in benchmarks/results/fire_heldout.md):", "",
              *grade_table([("fire, rule checks only", "fire", rechecked(results(fire_rows(args), ids, OUT), draft_score=False)),
                            ("fire, rule checks + draft score (shipped)", "fire", fire_all)], "independent"), "",
              *adapt_section(rows, fire_all, adapted)]
    (RESULTS / ("fire_best_of_two.md" if args.compare_drafts else "fire.md")).write_text("\n".join(lines) + "\n",
                                                                                       encoding="utf-8")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "latency", "sheet", "report"])
    parser.add_argument("--n", type=int, default=106)
    parser.add_argument("--graded", type=int, default=106, help="items the baselines run on (the first ones)")
    parser.add_argument("--grader", choices=sorted(GRADERS), default="independent")
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compare-drafts", action="store_true", help="FIRE with best of two (not the default)")
    args = parser.parse_args()
    if not DEV.exists():
        sys.exit(f"needs the silver dev split at {DEV}")
    kept = {OUT: ("fire", "fire-compare", *BASELINES, OPTION_ROWS, ADAPT_ROWS),
            LATENCY: tuple(TIMED)}  # what benchmarks/runs/ keeps
    posts = {r["id"]: r["hate_speech"] for r in dev_rows(10**6)}
    for folder, systems in kept.items():
        restore(folder, systems, posts)  # a new machine starts from the rows kept in git
    try:
        {"run": run, "latency": run_latency, "sheet": sheet, "report": report}[args.mode](args)
    finally:  # a stopped run keeps what it wrote too
        if args.mode in ("run", "latency"):
            for folder, systems in kept.items():
                archive(folder, systems)


if __name__ == "__main__":
    main()
