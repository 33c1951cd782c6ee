"""The report of fire_unseen.py: per-post usable replies of FIRE, zero-shot and retrieval with 95%
intervals and a paired test, FIRE's `ok` precision and coverage, harmful replies, latency, and
where FIRE's kept replies came from (a vetted block or the model's draft)."""

from __future__ import annotations

from collections import Counter

import fire_rows
from fire_grading import GRADER_BRIEF, graded_by_item, load_grades, regrade_agreement, share_interval
from provenance import header

LABELS = {"fire": "FIRE (shipped defaults)", "zero-shot": "zero-shot", "retrieval": "retrieval baseline",
          "fire-v1": "FIRE, the version before (rows fire-v1)"}


def verdicts(system: str, rows: dict[str, dict], grades: dict[str, dict]) -> dict[str, str]:
    """Post id -> verdict of its reply; a post without a reply (stopped, error) is 'no reply'."""
    graded = graded_by_item(system, rows, grades)
    return {i: (graded[i]["verdict"] if i in graded else ("no reply" if not r.get("reply") else "ungraded"))
            for i, r in rows.items()}


def mcnemar(first: dict[str, str], second: dict[str, str]) -> str:
    """Exact two-sided McNemar test on usable-or-not, per post both systems were run on."""
    from scipy.stats import binomtest

    both = [i for i in first if i in second and "ungraded" not in (first[i], second[i])]
    only_first = sum(first[i] == "usable" and second[i] != "usable" for i in both)
    only_second = sum(second[i] == "usable" and first[i] != "usable" for i in both)
    p = binomtest(only_first, only_first + only_second).pvalue if only_first + only_second else 1.0
    return (f"{len(both)} posts: usable only with the first {only_first}, only with the second {only_second}; "
            f"exact McNemar p = {p:.3g}")


def system_rows(name: str, rows: dict[str, dict], verdict: dict[str, str], n: int) -> str:
    count = Counter(verdict.values())
    ok = [i for i, r in rows.items() if r["status"] == "ok"]
    ok_usable = sum(verdict[i] == "usable" for i in ok)
    replies = sum(1 for r in rows.values() if r.get("reply"))
    times = [fire_rows.latency(r) for r in rows.values() if r.get("trace")]
    return (f"| {name} | {len(rows)} | {replies} | {count['usable']}/{n}{share_interval(count['usable'], n)} "
            f"| {count['fixable']} | {count['unusable']} | {count['harmful']} ({count['harmful'] / max(1, replies):.0%}) "
            f"| {len(ok)}/{n} ({len(ok) / max(1, n):.0%}) | {ok_usable}/{len(ok)}{share_interval(ok_usable, len(ok))} "
            f"| {sum(verdict[i] == 'harmful' for i in ok)} | {fire_rows.percentile(times, 0.5):.1f} |")


def origins(fire: dict[str, dict], verdict: dict[str, str]) -> list[str]:
    """FIRE's kept replies by origin and status: usable of graded."""
    cells: Counter = Counter()
    for i, row in fire.items():
        if row.get("reply"):
            key = (row["reply"].get("origin", "free"), row["status"])
            cells[key + ("n",)] += 1
            cells[key + ("usable",)] += verdict[i] == "usable"
    lines = ["| kept reply | status | replies | usable |", "|---|---|---|---|"]
    for origin in ("blocks", "free"):
        for status in ("ok", "flagged"):
            if n := cells[(origin, status, "n")]:
                usable = cells[(origin, status, "usable")]
                lines.append(f"| {origin} | {status} | {n} | {usable}{share_interval(usable, n)} |")
    return lines


def section(posts: list[dict], stored: dict[str, dict[str, dict]], grades: dict[str, dict]) -> list[str]:
    """The table, the paired tests and FIRE's origins on `posts`."""
    ids = [p["id"] for p in posts]
    n = len(ids)
    runs = {system: kept for system, rows in stored.items() if (kept := fire_rows.only(rows, ids))}
    # The earlier version's replies were written and graded as "fire": their grades key that way.
    verdict = {system: verdicts("fire" if system == "fire-v1" else system, rows, grades) for system, rows in runs.items()}
    lines = ["| system | posts run | replies | usable per post | fixable | unusable | harmful (of replies) "
             "| status ok (of posts) | usable among ok | harmful among ok | p50 s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [system_rows(LABELS[s], runs[s], verdict[s], n) for s in LABELS if s in runs]
    lines += ["", "Posts without a reply (the gate or the analyst judged them not hateful, or an error): " + "; ".join(
        f"{LABELS[s]} {sum(1 for r in runs[s].values() if not r.get('reply'))} of {len(runs[s])}"
        for s in LABELS if s in runs) + ".", ""]
    lines += ["Paired, usable or not per post:", ""]
    lines += [f"- FIRE vs {LABELS[s]}: {mcnemar(verdict['fire'], verdict[s])}"
              for s in ("zero-shot", "retrieval", "fire-v1") if "fire" in verdict and s in verdict]
    if "fire" in runs:
        lines += ["", "Where FIRE's kept replies came from:", "", *origins(runs["fire"], verdict["fire"])]
        ungraded = sum(v == "ungraded" for s in verdict.values() for v in s.values())
        lines += ["", f"Replies without a grade yet: {ungraded}."]
    return lines


def with_earlier_fire(stored: dict[str, dict[str, dict]]) -> tuple[dict[str, dict[str, dict]], list[str]]:
    """FIRE's rows with the earlier version's where today's version has none, and the lines saying so."""
    earlier = {i: r for i, r in stored.get("fire-v1", {}).items() if i not in stored.get("fire", {})}
    note = [f"FIRE's row below holds the version before (fire-v1) on the {len(earlier)} posts today's "
            "version was not run on: two versions, not one.", ""] if earlier else []
    merged = {k: v for k, v in stored.items() if k != "fire-v1"} | {"fire": {**stored.get("fire", {}), **earlier}}
    return merged, note


MEMORY = "shipped defaults (exemplar bank + SupCon head, category model, gate, draft score, block library)"


def write_report(posts: list[dict], stored: dict[str, dict[str, dict]], args, *, results, title: str,
                 split: str, memory: str = MEMORY, extra: list[str] = (), first: int = 0) -> None:
    """`results`: the file written whole; `split`: what the posts are, for its header; `first`: the
    posts before it were reported before (their section is apart)."""
    grades = load_grades("independent")
    lines = header(title, split=split, model=f"{args.model} (embedded GGUF, llama.cpp, {args.threads} threads)",
                   memory=memory)
    lines += ["Graded blind by fresh AI-agent grader instances with the brief in "
              f"benchmarks/grades/{GRADER_BRIEF} and shared/docs/reply-rubric.md, systems hidden and shuffled. "
              "Usable per post counts a post without a reply (gate stopped it, error) as not usable. "
              "Intervals: 95% Wilson.", ""]
    if first:
        lines += [f"## Posts {first + 1}-{len(posts)}: read by nobody before this run", "",
                  *section(posts[first:], stored, grades), "",
                  f"## Posts 1-{first}: reported before, their FIRE replies read while the shipped "
                  "version was built (not a clean test)", "", *section(posts[:first], stored, grades), "",
                  f"## All {len(posts)} posts", ""]
        stored, note = with_earlier_fire(stored)
        lines += note
    lines += [*section(posts, stored, grades), "", *extra, regrade_agreement("independent"), ""]
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
