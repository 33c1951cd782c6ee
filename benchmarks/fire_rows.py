"""Stored result rows of the FIRE benchmarks (fire.py, fire_heldout.py): reading them, the
status today's checks and draft score give them, and the table both reports print."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict], mode: str = "w") -> None:
    """`rows` as JSON lines, replacing the file (mode "w") or after what it holds ("a")."""
    with path.open(mode, encoding="utf-8") as out:
        out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def results(system: str, ids: list[str], folder: Path) -> dict[str, dict]:
    path = folder / f"{system}.jsonl"
    return {row["id"]: row for row in read_jsonl(path) if row.get("id") in ids} if path.exists() else {}


# The rows of every run, kept in git without the posts (the data stays out of it): a new machine
# starts from them, so reports regenerate and runs resume without hours of LLM calls.
ARCHIVE = Path(__file__).resolve().parent / "runs"
COPIED_RUN = 5  # words in a row copied from the post: masked in what is kept (queries, claims, notes)


def masked(value, post_words: list[str]):
    """`value` (a row's field) with every run of COPIED_RUN words copied from the post replaced by
    [post]: the analyst's query and the generator's claim note often quote the post whole."""
    run = min(COPIED_RUN, len(post_words)) or 1
    grams = {tuple(post_words[i:i + run]) for i in range(len(post_words) - run + 1)}  # once per row

    def mask(item):
        if isinstance(item, dict):
            return {k: mask(v) for k, v in item.items()}
        if isinstance(item, list):
            return [mask(v) for v in item]
        return _mask_text(item, grams, run) if isinstance(item, str) else item

    return mask(value)


def _mask_text(text: str, grams: set[tuple[str, ...]], run: int) -> str:
    words = list(re.finditer(r"\w+", text))
    hidden = set()
    for i in range(len(words) - run + 1):
        if tuple(w.group().lower() for w in words[i:i + run]) in grams:
            hidden.update(range(i, i + run))
    out, end = [], 0
    for i in sorted(hidden):
        if i - 1 not in hidden:  # a hidden stretch starts: one [post] for all of it
            out.append(text[end:words[i].start()] + "[post]")
        end = words[i].end()
    return "".join(out) + text[end:]


def archive(folder: Path, systems: tuple[str, ...]) -> None:
    """Copy each system's rows in `folder` to benchmarks/runs/<folder name>/ without the post:
    its text is left out and copies of it are masked everywhere but in the reply (whose text keys
    its grade; the replies are committed in benchmarks/grades/ too)."""
    for system in systems:
        if (path := folder / f"{system}.jsonl").exists():
            (ARCHIVE / folder.name).mkdir(parents=True, exist_ok=True)
            kept = []
            for row in read_jsonl(path):
                kept.append(masked({k: v for k, v in row.items() if k != "text"},
                                   re.findall(r"\w+", row.get("text", "").lower())))
                if "reply" in row:
                    kept[-1]["reply"] = row["reply"]  # as written: its text keys its grade
            write_jsonl(ARCHIVE / folder.name / path.name, kept)


def restore(folder: Path, systems: tuple[str, ...], posts: dict[str, str]) -> None:
    """Where this machine has no rows of a system, the archived ones with their posts put back
    (`posts`: id -> text, read from the data)."""
    for system in systems:
        kept, path = ARCHIVE / folder.name / f"{system}.jsonl", folder / f"{system}.jsonl"
        if kept.exists() and not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            write_jsonl(path, [{**row, "text": posts[row["id"]]} for row in read_jsonl(kept) if row.get("id") in posts])


def dispatch(modes: dict, args, folder: Path, systems: tuple[str, ...], posts: dict[str, str]) -> None:
    """Run `modes[args.mode](args)` with the rows kept in git put back first (a new machine starts
    from them) and, after a run, kept again, also when it was stopped."""
    restore(folder, systems, posts)
    try:
        modes[args.mode](args)
    finally:
        if args.mode == "run":
            archive(folder, systems)


def run_posts(posts: list[dict], source: Path, folder: Path, systems, args) -> None:
    """Each of `systems` over `posts` ({id, text}) in turn, into `folder`/<system>.jsonl (resumable:
    a batch skips ids it holds); `source` is the batch input written from `posts`."""
    from rebuttal.fire.batch import run_fire_batch
    from rebuttal.llm import ModelSettings, load_model

    folder.mkdir(parents=True, exist_ok=True)
    source.write_text("".join(json.dumps({"id": p["id"], "text": p["text"]}) + "\n" for p in posts))
    model = load_model(ModelSettings.of(model=args.model, threads=args.threads))
    for system in systems:
        run_fire_batch(source, folder / f"{system}.jsonl", system=system, model=model)


# FIRE's generator form measured beside the default (FireSettings.reply_form) and the file of its
# rows: the default run's analyses with the replies redrafted in that form (redraft_into).
OPTION_FORM = "draft_baseline"
OPTION_ROWS = "fire-draft-baseline"


def option_label(rows: dict[str, dict], fire: dict[str, dict]) -> str:
    return f"fire, option reply_form={OPTION_FORM} ({drafted_by(rows)}, {analyses_note(rows, fire)})"


def adapt_label(rows: dict[str, dict], fire: dict[str, dict]) -> str:
    return f"fire, option adapt=True with a memory of silver train ({analyses_note(rows, fire)})"


def analyses_note(option: dict[str, dict], fire: dict[str, dict]) -> str:
    """An option's rows are redrafts on FIRE's stored analyses; a FIRE row rerun since (e.g. after
    a new category model) leaves that option row on the earlier analysis: say on how many."""
    earlier = sum(1 for i, row in option.items() if i in fire and row.get("analysis") != fire[i].get("analysis"))
    return "same analyses" if not earlier else (f"same analyses but {earlier} drafted on an earlier FIRE run's "
                                                "analysis: FIRE's row was rerun since")


# FIRE adapting the nearest human reply (FireSettings.adapt) from a memory of all silver train, the
# memory a user who holds the data builds (`rebuttal memory build`): the shipped bank rarely has a
# record close enough to adapt. Its rows: the default run's analyses, the reply redrafted.
ADAPT_ROWS = "fire-adapt-silver"
SILVER = Path(__file__).resolve().parents[2] / "shared" / "data" / "factualcs-silver"


def silver_memory(folder: Path) -> Path:
    """`rebuttal memory build --data train.jsonl --data train_round2.jsonl --out folder` (defaults:
    the shipped SupCon head, k=5), built once."""
    if not (folder / "records.jsonl").exists():
        from rebuttal.memory.encoders import load_encoder
        from rebuttal.memory.records import load_many
        from rebuttal.memory.store import Memory

        records = load_many([SILVER / "train.jsonl", SILVER / "train_round2.jsonl"])
        Memory.build(records, load_encoder("default")).save(folder)
    return folder


def redraft_into(source: Path, target: Path, ids: list[str], model, **settings) -> int:
    """FIRE's stored rows for `ids` with their replies written again by a generator with other
    `settings` (e.g. reply_form="draft_baseline"), on the stored analyses and evidence
    (FirePipeline.redraft: the gate, analyst and search do not run again), so two generator settings
    compare reply for reply. Resumable: rows already in `target` drafted on the source row's
    analysis are kept; one whose FIRE row was rerun since (a new gate or category model) is
    drafted again. Returns how many were written."""
    from rebuttal.fire.factory import build_system
    from rebuttal.types import FireResult

    stored, done = results(source.stem, ids, source.parent), results(target.stem, ids, target.parent)
    current = {i for i, row in done.items() if i in stored and row.get("analysis") == stored[i].get("analysis")}
    todo = [i for i in ids if i in stored and i not in current]
    if not todo:
        return 0  # nothing to write: the pipeline is not even built
    stale = set(done) - current
    if stale:  # kept rows stay as they are, in their order
        write_jsonl(target, [row for row in read_jsonl(target) if row.get("id") not in stale])
    fire = build_system("fire", model=model, **settings)
    for item_id in todo:
        redone = fire.redraft(FireResult.model_validate(stored[item_id])).model_dump(mode="json")
        write_jsonl(target, [redone], mode="a")
    return len(todo)


def drafted_by(rows: dict[str, dict]) -> str:
    """The generator prompts (first part of the trace's prompt version) FIRE's rows were drafted with."""
    versions = {s["prompt_version"].split("+")[0] for r in rows.values() for s in r["trace"]["steps"]
                if s["stage"] == "generator"}
    return ", ".join(f"`{v}`" for v in sorted(versions)) or "none"


def percentile(values: list[float], q: float) -> float:
    """numpy's percentile (q a fraction): the p50 of an even count is the mean of the middle two."""
    return float(np.percentile(values, q * 100)) if len(values) else float("nan")


def latency(row: dict) -> float:
    return sum(step["latency_s"] for step in row["trace"]["steps"])


def row_evidence(row: dict) -> list:
    """The evidence items a stored result row was given."""
    from rebuttal.types import EvidenceItem

    return [EvidenceItem(**e) for e in row.get("evidence") or []]


def judged_checks(rows: dict[str, dict]) -> dict[str, list]:
    """Every system's final reply through the same checks (MiniLM relevance included)."""
    from rebuttal.fire.generator import DraftJudge
    from rebuttal.llm.embeddings import load_minilm

    judge = DraftJudge(load_minilm())
    out = {}
    for item_id, row in rows.items():
        if row.get("reply"):
            out[item_id] = judge.judge(row["reply"]["text"], row["text"], row_evidence(row), [], None, False)
    return out


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


def rechecked(rows: dict[str, dict], draft_score: bool = True) -> dict[str, dict]:
    """A system's rows as today's checks see them: an ok reply that fails a text check added since
    its run (baselines run only the text checks), scores below the shipped draft score's cut or
    stands on reasoning that calls the post harmless counts as flagged. These only flag, never
    rewrite, so this is the status a rerun would give (the stored file is left as it is); a text
    check added since a FIRE run would also have asked for a redraft, which only a rerun shows.
    Without `draft_score`, a reply the draft score alone flagged counts as ok (the rule checks only)."""
    from rebuttal.fire.coherence import reasoning_denies_hate
    from rebuttal.fire.generator import DraftJudge, reply_problems
    from rebuttal.learned.draft_score import DraftScore
    from rebuttal.llm.embeddings import load_minilm

    judge = DraftJudge(load_minilm(), DraftScore.load()) if draft_score else None

    def status(row: dict) -> str:
        flagged_by_score_alone = row["status"] == "flagged" and row.get("trace", {}).get("flags") == [REVIEW_FLAG]
        if row["status"] != "ok" and (draft_score or not flagged_by_score_alone):
            return row["status"]
        text, post = row["reply"]["text"], row["text"]
        reviews = judge.review(text, post) if judge else []
        failing = reply_problems(text, post, row_evidence(row)) or not all(c.passed for c in reviews)
        return "flagged" if failing or reasoning_denies_hate(row["analysis"]["reasoning"]) else "ok"

    return {i: {**row, "status": status(row)} if row.get("reply") else row for i, row in rows.items()}


REVIEW_FLAG = "draft_review_score"  # the draft score's flag (a failed `review_score` check)


def only(rows: dict[str, dict], ids) -> dict[str, dict]:
    return {i: r for i, r in rows.items() if i in ids}
