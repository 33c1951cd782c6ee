"""Blind grading of FIRE's and the baselines' replies with the reply rubric (fire.py's sheet and
grade tables). Each grader keeps its own file of {"key", "verdict", "why"} rows; a key is bound
to the system, the item and the reply's text, so a grade carries over to a rerun only if the
text is unchanged, and only this code maps a key back to its system.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from pathlib import Path

from fire_rows import read_jsonl, write_jsonl

GRADES = Path(__file__).resolve().parent / "grades"
# independent: fresh instances of an AI agent that never saw the code or the checks, each given the
# rubric, the brief in independent-grader.md and one shuffled sheet with the systems hidden.
GRADERS = {"independent": "fire-dev-independent.jsonl"}
GRADER_BRIEF = "independent-grader.md"  # what each independent grader instance is told
VERDICTS = ("usable", "fixable", "unusable", "harmful")


def blind_key(system: str, item_id: str, reply: str) -> str:
    return hashlib.sha256(f"{system}:{item_id}:{reply}".encode()).hexdigest()[:10]


def reply_keys(system: str, rows: dict[str, dict]) -> dict[str, str]:
    """Item id -> blind key, for the rows that hold a reply."""
    return {i: blind_key(system, i, r["reply"]["text"]) for i, r in rows.items() if r.get("reply")}


def graded_by_item(system: str, rows: dict[str, dict], grades: dict[str, dict]) -> dict[str, dict]:
    """Item id -> grade, for the rows whose reply has one."""
    return {i: grades[k] for i, k in reply_keys(system, rows).items() if k in grades}


def load_grades(grader: str) -> dict[str, dict]:
    path = GRADES / GRADERS[grader]
    if not path.exists():
        return {}
    return {g["key"]: g for g in read_jsonl(path)}


def record_replies(systems: list[tuple[str, dict[str, dict]]], path: Path) -> None:
    """Add each reply's key, system, item and text to `path` (committed beside the grades, without
    the post: the data stays outside the repository), so the draft score can be retrained from a
    clean clone (rebuttal.learned.draft_score)."""
    known = {r["key"] for r in read_jsonl(path)} if path.exists() else set()
    new = [{"key": key, "system": system, "item": item_id, "reply": rows[item_id]["reply"]["text"]}
           for system, rows in systems for item_id, key in reply_keys(system, rows).items() if key not in known]
    write_jsonl(path, new, mode="a")


def regrade_agreement(grader: str) -> str:
    """How often a second grader instance, given an already graded reply mixed into its sheet, gave
    the same verdict (grades/fire-dev-regrades.jsonl): the noise in any one grade."""
    path = GRADES / "fire-dev-regrades.jsonl"
    first = load_grades(grader)
    pairs = [(first[g["key"]]["verdict"], g["verdict"]) for g in read_jsonl(path)
             if g["key"] in first] if path.exists() else []
    if not pairs:
        return "No replies were graded twice."
    same = sum(a == b for a, b in pairs)
    usable = sum((a == "usable") == (b == "usable") for a, b in pairs)
    return (f"Grader noise: {len(pairs)} replies graded earlier were mixed into later sheets; the second grade "
            f"gave the same verdict for {same} and the same usable/not-usable call for {usable}.")


def write_sheet(systems: list[tuple[str, dict[str, dict]]], posts: dict[str, str], grader: str, path: Path,
                replies: Path) -> int:
    """Every reply `grader` has not graded yet, shuffled, with only a key to tell them apart;
    every reply's text goes to `replies` too."""
    record_replies(systems, replies)
    graded = load_grades(grader)
    entries, seen = [], set()
    for system, rows in systems:
        for item_id, key in reply_keys(system, rows).items():
            if key not in graded and key not in seen:  # two settings may write the same reply
                seen.add(key)
                entries.append({"key": key, "post": posts[item_id], "reply": rows[item_id]["reply"]["text"]})
    random.Random(7).shuffle(entries)
    write_jsonl(path, entries)
    return len(entries)


def grade_table(entries: list[tuple[str, str, dict[str, dict]]], grader: str) -> list[str]:
    """One row per (label, system, rows): `grader`'s verdicts on that system's replies in `rows`."""
    grades = load_grades(grader)
    if not grades:
        return [f"No grades yet (benchmarks/grades/{GRADERS[grader]} is absent)."]
    lines = ["| system | graded | " + " | ".join(VERDICTS) + " | usable share | usable per post (no reply = not usable) "
             "| usable among status ok (95% interval) | off-topic or contradicting with status ok |",
             "|---|---|" + "---|" * (len(VERDICTS) + 4)]
    for label, system, rows in entries:
        graded = graded_by_item(system, rows, grades)
        verdicts = Counter(g["verdict"] for g in graded.values())
        ok = {i: g for i, g in graded.items() if rows[i]["status"] == "ok"}
        ok_usable = sum(g["verdict"] == "usable" for g in ok.values())
        bad_ok = sum(any(w in g.get("why", "").lower() for w in ("off-topic", "contradict")) for g in ok.values())
        lines.append(f"| {label} | {len(graded)} | " + " | ".join(str(verdicts[v]) for v in VERDICTS)
                     + f" | {verdicts['usable'] / max(1, len(graded)):.0%} | {verdicts['usable']}/{len(rows)} "
                     f"| {ok_usable}/{len(ok)}{share_interval(ok_usable, len(ok))} | {bad_ok} |")
    return lines


def paired_usable(first: tuple[str, str, dict[str, dict]], second: tuple[str, str, dict[str, dict]],
                  grader: str) -> str:
    """Usable replies on the posts both (label, system, rows) answered, and on those only the second
    answered (FIRE's gate stops posts a baseline answers anyway)."""
    grades = load_grades(grader)
    (label_a, system_a, rows_a), (label_b, system_b, rows_b) = first, second
    keys_a, keys_b = reply_keys(system_a, rows_a), reply_keys(system_b, rows_b)

    def usable(keys: dict[str, str], ids: list[str]) -> int:
        return sum(grades.get(keys[i], {}).get("verdict") == "usable" for i in ids)

    both = [i for i in keys_a if i in keys_b]
    only_b = [i for i in keys_b if i not in keys_a]
    return (f"On the {len(both)} posts both answered: {label_a} {usable(keys_a, both)} usable, {label_b} "
            f"{usable(keys_b, both)}; on the {len(only_b)} posts only {label_b} answered, {usable(keys_b, only_b)} usable.")


def category_table(entries: list[tuple[str, str, dict[str, dict]]], gold: dict[str, str], grader: str) -> list[str]:
    """Usable of graded replies per gold category, one row per (label, system, rows)."""
    grades = load_grades(grader)
    categories = sorted(set(gold.values()))
    lines = ["| system | " + " | ".join(categories) + " |", "|---|" + "---|" * len(categories)]
    for label, system, rows in entries:
        graded = [(gold.get(i), g["verdict"]) for i, g in graded_by_item(system, rows, grades).items()]
        cells = [f"{sum(v == 'usable' for c, v in graded if c == cat)}/{sum(c == cat for c, _ in graded)}"
                 for cat in categories]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def share_interval(k: int, n: int) -> str:
    """The 95% Wilson interval of k/n, e.g. " (45-94%)": 7 usable of 9 `ok` drafts cannot tell
    78% from the 85% target."""
    from scipy.stats import binomtest

    if n == 0:
        return ""
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return f" ({ci.low:.0%}-{ci.high:.0%})".replace("%-", "-")


def draft_score_table(replies: Path, grader: str) -> list[str]:
    """How the shipped draft score and its MiniLM fallback rank every graded reply in `replies`
    (all runs, not only the rows a report reads): AUC and what each cut passes, per system."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from rebuttal.learned.draft_score import DraftScore, graded_replies, usable_chance
    from rebuttal.llm.embeddings import load_minilm

    rows = graded_replies(replies, GRADES / GRADERS[grader])
    usable = np.array([r["verdict"] == "usable" for r in rows])
    score = DraftScore.load()
    if score.reads_post:  # this table reads replies alone; the pair score's is in fire_ranker.py's report
        return ["The shipped draft score reads each reply with its post since issue 46: its ranking of graded "
                "replies is in benchmarks/results/fire_ranker.md."]
    heads = [(f"shipped ({score.head.meta['reads']})", score.threshold,
              np.array([score.review(r["reply"], None).chance for r in rows]))]
    if score.fallback is not None:
        heads.append((f"fallback ({score.fallback.meta['reads']})", float(score.fallback.meta["threshold"]),
                      usable_chance(score.fallback, load_minilm().encode([r["reply"] for r in rows]))))
    lines = ["| head | system | replies | usable | AUC | passed by the cut | usable among passed |",
             "|---|---|---|---|---|---|---|"]
    for name, cut, chance in heads:
        for system in ("all", *sorted({r["system"] for r in rows})):
            mask = np.array([system in ("all", r["system"]) for r in rows])
            passed = mask & (chance >= cut)
            lines.append(f"| {name} | {system} | {mask.sum()} | {usable[mask].sum()} | "
                         f"{roc_auc_score(usable[mask], chance[mask]):.3f} | {passed.sum()} | {usable[passed].sum()} |")
    return lines
