"""FIRE and the zero-shot baseline on posts no draft check or draft score was read off: a
seeded sample of silver dev round 2, blind-graded like fire.py's dev run, so the draft score's
effect on `ok` is measured out of sample. Results: benchmarks/results/fire_heldout.md.

    python benchmarks/fire_heldout.py run --n 60      # resumable: FIRE, the baseline, then FIRE's option form
    python benchmarks/fire_heldout.py run --n 120 --no-option   # FIRE and the baseline only
    python benchmarks/fire_heldout.py sheet --n 60    # grading sheet: shuffled, systems hidden
    python benchmarks/fire_heldout.py report --n 60
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fire_rows  # noqa: E402
import fire_stale  # noqa: E402
from fire_grading import (GRADER_BRIEF, GRADES, category_table, draft_score_table, grade_table,  # noqa: E402
                          paired_usable, regrade_agreement, write_sheet)
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ROUND2 = fire_rows.SILVER / "dev_round2.jsonl"
OUT = ROOT / "runs" / "bench" / "fire-heldout"
RESULTS = ROOT / "benchmarks" / "results" / "fire_heldout.md"
REPLIES = GRADES / "fire-heldout-replies.jsonl"  # apart from dev's: the draft score never trains on these
SLUR_REPLIES = GRADES / "fire-slurs-replies.jsonl"  # fire_slurs.py's sample: dev for one option
SEED = 2
SYSTEMS = ("fire", "zero-shot")
KEPT = (*SYSTEMS, fire_rows.OPTION_ROWS)  # the row files benchmarks/runs/ keeps
SCORE_INTRO = ("Every reply ever graded on these posts (all runs, FIRE's option form counted as fire), scored by "
               "the shipped draft score (trained on dev round-1 grades only) and by its MiniLM fallback (until "
               "2026-12-03 the shipped head: same recipe and data). Before the rule checks, so passed counts are "
               "higher than the `ok` counts above.")


def sample(n: int) -> list[dict]:
    """The first n of a seeded shuffle: round 2's file is ordered by source."""
    rows = [json.loads(line) for line in ROUND2.read_text(encoding="utf-8").splitlines() if line.strip()]
    random.Random(SEED).shuffle(rows)
    return rows[:n]


def run(args) -> None:
    from rebuttal.fire.batch import run_fire_batch
    from rebuttal.llm import ModelSettings, load_model

    OUT.mkdir(parents=True, exist_ok=True)
    source = OUT / f"round2_{args.n}.jsonl"
    source.write_text("".join(json.dumps({"id": r["id"], "text": r["hate_speech"]}) + "\n" for r in sample(args.n)))
    model = load_model(ModelSettings.of(model=args.model, threads=args.threads))
    print(f"{fire_stale.drop_gate_changed(OUT / 'fire.jsonl')} rows whose gate decision today's gate changes are run again")
    for system in SYSTEMS:
        run_fire_batch(source, OUT / f"{system}.jsonl", system=system, model=model)
    if args.no_option:
        return
    ids = [r["id"] for r in sample(args.n)]
    fire_rows.redraft_into(OUT / "fire.jsonl", OUT / f"{fire_rows.OPTION_ROWS}.jsonl", ids, model,
                           reply_form=fire_rows.OPTION_FORM)


def stored(ids: list[str]) -> dict[str, dict[str, dict]]:
    return {system: fire_rows.results(system, ids, OUT) for system in (*SYSTEMS, fire_rows.OPTION_ROWS)}


def sheet(args) -> None:
    rows = sample(args.n)
    path = OUT / "blind_sheet-independent.jsonl"
    systems = [("fire" if name == fire_rows.OPTION_ROWS else name, system_rows)
               for name, system_rows in stored([r["id"] for r in rows]).items()]  # the option is FIRE too
    count = write_sheet(systems, {r["id"]: r["hate_speech"] for r in rows}, "independent", path, REPLIES)
    print(f"{count} replies without a grade -> {path}")


def slur_sample_overlap(ids) -> int:
    """Posts here that fire_slurs.py measured its option on (it keeps out only the first 120)."""
    return len({r["item"] for r in fire_rows.read_jsonl(SLUR_REPLIES)} & set(ids))


def report(args) -> None:
    rows = sample(args.n)
    gold = {r["id"]: r["hs_type"] for r in rows}
    as_run = stored(list(gold))
    today = {system: fire_rows.rechecked(system_rows) for system, system_rows in as_run.items()}
    option = today.pop(fire_rows.OPTION_ROWS)
    label = fire_rows.option_label(option, today["fire"]) if option else ""
    if option and len(option) < len(gold):  # run on an earlier, smaller sample
        label += f", the first {len(option)} posts only"
    forms = [(f"{label}, rule checks + draft score", "fire", option)] if option else []
    lines = header("FIRE drafts on held-out posts", split=f"silver dev round 2, the first {args.n} of a seeded "
                   f"shuffle (seed {SEED}); no prompt or draft-score setting was read off these posts, one "
                   "draft-check pattern was (meta talk \"this post\", added 2026-12-04 after a grade here; it "
                   f"flags one draft the draft score already flagged); {slur_sample_overlap(gold)} of them (after the "
                   "first 120) had replies in fire_slurs.py's run, where an option was measured and left off",
                   model=f"{args.model} (embedded GGUF, llama.cpp, {args.threads} threads)",
                   memory="shipped defaults: exemplar bank + shipped SupCon head; shipped category model, hate gate "
                   "and draft score")
    shipped = f"fire (shipped: {fire_rows.drafted_by(as_run['fire'])})"
    fire, baseline = (shipped, "fire", today["fire"]), ("zero-shot", "zero-shot", today["zero-shot"])
    systems = {shipped: today["fire"], **({label: option} if option else {}),
               "zero-shot": today["zero-shot"]}
    lines += ["## Systems", "", *fire_rows.system_table(systems, gold), "",
              "Status is re-read with today's checks and the shipped draft score (which only flags, never "
              "rewrites, so this is the status a rerun would give).", "",
              "## Blind grade by an independent grader (shared/docs/reply-rubric.md)", "",
              "Fresh instances of the same AI-agent grader as benchmarks/results/fire.md, with the same brief "
              f"(benchmarks/grades/{GRADER_BRIEF}) and the systems hidden. The first two rows are FIRE's "
              "replies with `ok` from the rule checks alone and with the draft score: the draft "
              "score was trained on dev round-1 grades only, so the difference between them is out of sample. "
              f"The option's replies were written on FIRE's stored analyses and evidence (FirePipeline.redraft, "
              f"`reply_form={fire_rows.OPTION_FORM}`); it was measured on silver dev round 1 first "
              "(benchmarks/results/fire.md), not chosen on these posts.", "",
              *grade_table([(f"{shipped}, rule checks only", "fire", fire_rows.rechecked(as_run["fire"], draft_score=False)),
                            (f"{shipped}, rule checks + draft score", "fire", today["fire"]), *forms,
                            ("zero-shot, rule checks + draft score", "zero-shot", today["zero-shot"])], "independent"),
              "", regrade_agreement("independent"), "",
              paired_usable(fire, baseline, "independent"), "", "Usable of graded replies per gold category:", "",
              *category_table([fire, *forms, baseline], gold, "independent"), "",
              "## The draft score on every graded held-out reply", "",
              SCORE_INTRO, "", *draft_score_table(REPLIES, "independent"), ""]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "sheet", "report"])
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-option", action="store_true", help="run: skip FIRE's option form")
    args = parser.parse_args()
    if not ROUND2.exists():
        sys.exit(f"needs the silver dev round-2 split at {ROUND2}")
    posts = {r["id"]: r["hate_speech"] for r in sample(10**6)}
    fire_rows.dispatch({"run": run, "sheet": sheet, "report": report}, args, OUT, KEPT, posts)


if __name__ == "__main__":
    main()
