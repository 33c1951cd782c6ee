"""FIRE on the silver dev posts that use a slur: the generator shown the post with its slurs
replaced by the people they name (`FireSettings(name_the_people=True)`, an option) against the
shipped generator, shown the post as written, on the same stored analyses and evidence.
Results: benchmarks/results/fire_slurs.md.

    python benchmarks/archive/fire_slurs.py run       # resumable: FIRE with the option, then the shipped redraft
    python benchmarks/archive/fire_slurs.py sheet     # grading sheet: shuffled, settings hidden
    python benchmarks/archive/fire_slurs.py report

Posts: every hateful silver dev post with a slur (fire/slurs.py's list) in round 1, and in round 2
apart from fire_heldout.py's held-out sample (its first 120), which stays held out.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: fire_rows, fire_grading, ... (archived script)
import fire_rows  # noqa: E402
from fire_grading import GRADER_BRIEF, GRADES, grade_table, regrade_agreement, write_sheet  # noqa: E402
from fire_heldout import sample as heldout_sample  # noqa: E402
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "runs" / "bench" / "fire-slurs"
RESULTS = ROOT / "benchmarks" / "results" / "fire_slurs.md"
REPLIES = GRADES / "fire-slurs-replies.jsonl"
HELD_OUT = 120  # fire_heldout.py's sample, not used here
NAMED = "fire-named"  # FIRE run whole with the option
SYSTEMS = (NAMED, "fire")  # "fire": the reply written again as shipped, on the same analyses


@cache  # main, stored() and the report each ask; the silver files are read once (callers only read)
def posts() -> list[dict]:
    from rebuttal.fire.slurs import SLUR

    held = {r["id"] for r in heldout_sample(HELD_OUT)}
    rows = [r for name in ("dev.jsonl", "dev_round2.jsonl") for r in fire_rows.read_jsonl(fire_rows.SILVER / name)]
    return [r for r in rows if r["is_hateful"] and r["id"] not in held and SLUR.search(r["hate_speech"])]


def run(args) -> None:
    from rebuttal.fire.batch import run_fire_batch
    from rebuttal.llm import ModelSettings, load_model

    OUT.mkdir(parents=True, exist_ok=True)
    items = posts()
    source = OUT / "posts.jsonl"
    source.write_text("".join(json.dumps({"id": r["id"], "text": r["hate_speech"]}) + "\n" for r in items))
    model = load_model(ModelSettings.of(model=args.model, threads=args.threads))
    run_fire_batch(source, OUT / f"{NAMED}.jsonl", system="fire", model=model, name_the_people=True)
    fire_rows.redraft_into(OUT / f"{NAMED}.jsonl", OUT / "fire.jsonl", [r["id"] for r in items], model,
                           name_the_people=False)


def stored() -> dict[str, dict[str, dict]]:
    ids = [r["id"] for r in posts()]
    return {system: fire_rows.results(system, ids, OUT) for system in SYSTEMS}


def sheet(args) -> None:
    path = OUT / "blind_sheet-independent.jsonl"
    text = {r["id"]: r["hate_speech"] for r in posts()}
    count = write_sheet([("fire", rows) for rows in stored().values()], text, "independent", path, REPLIES)
    print(f"{count} replies without a grade -> {path}")


def slur_drafts(rows: dict[str, dict]) -> tuple[int, int, int]:
    """Replies, first drafts that failed the slur check, kept replies that use a slur."""
    from rebuttal.fire.slurs import slur_used

    def first_failed(row: dict) -> list[str]:
        notes = [n for s in row["trace"]["steps"] if s["stage"] == "generator" for n in s["notes"]]
        return next((n.removeprefix("draft 1: failed ").split(", ") for n in notes
                     if n.startswith("draft 1: failed ")), [])

    replies = [r for r in rows.values() if r.get("reply")]
    return (len(replies), sum("slur" in first_failed(r) for r in replies),
            sum(slur_used(r["reply"]["text"]) is not None for r in replies))


def report(args) -> None:
    items = posts()
    as_run = stored()
    today = {system: fire_rows.rechecked(rows) for system, rows in as_run.items()}
    named, shown = "fire, option name_the_people=True (the post's slurs named as people)", \
        "fire (shipped: the post shown as written)"
    lines = header("FIRE on silver dev posts that use a slur",
                   split=f"silver dev rounds 1 and 2, the {len(items)} hateful posts with a slur (round 2 without "
                   f"fire_heldout.py's first {HELD_OUT}); dev: this setting was chosen here",
                   model=f"{args.model} (embedded GGUF, llama.cpp, {args.threads} threads)",
                   memory="shipped defaults: exemplar bank + shipped SupCon head; shipped category model, hate gate "
                   "and draft score")
    lines += ["## Systems", "", *fire_rows.system_table({named: today[NAMED], shown: today["fire"]},
                                                         {r["id"]: r["hs_type"] for r in items}), "",
              "The option's rows are FIRE run whole with it; the shipped rows are the same stored analyses and "
              "evidence with the reply written again as shipped (FirePipeline.redraft). Status is re-read with "
              "today's checks.", "",
              "| system | replies | first drafts that failed the slur check | kept replies with a slur in their own voice |",
              "|---|---|---|---|",
              *[f"| {label} | " + " | ".join(map(str, slur_drafts(as_run[system]))) + " |"
                for label, system in ((named, NAMED), (shown, "fire"))], "",
              "## Blind grade by an independent grader (shared/docs/reply-rubric.md)", "",
              f"Fresh instances of the AI-agent grader of fire.md and fire_heldout.md, same brief (benchmarks/grades/"
              f"{GRADER_BRIEF}), settings hidden; the grader sees the post as written.", "",
              *grade_table([(named, "fire", today[NAMED]), (shown, "fire", today["fire"])], "independent"),
              "", regrade_agreement("independent"), ""]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "sheet", "report"])
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if not fire_rows.SILVER.exists():
        sys.exit(f"needs the silver data at {fire_rows.SILVER}")
    fire_rows.dispatch({"run": run, "sheet": sheet, "report": report}, args, OUT, SYSTEMS,
                       {r["id"]: r["hate_speech"] for r in posts()})


if __name__ == "__main__":
    main()
