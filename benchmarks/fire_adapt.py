"""fire.md's section on adapting the nearest human reply (`adapt`, off by default): how often the
shipped bank could apply it, and FIRE with and without it on the same stored analyses."""

from __future__ import annotations

from fire_grading import grade_table
from fire_rows import only


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


def adapt_section(rows: list[dict], fire: dict[str, dict], adapted: dict[str, dict]) -> list[str]:
    """Adapting the nearest human reply: how often the shipped bank could, and FIRE with and without
    it on the posts where a memory of all silver train gave a record to adapt."""
    used = {i for i, r in adapted.items() if r.get("reply") and r["reply"].get("adapted_from")}
    lines = ["## Adapting a human reply (`adapt`, off by default)", "",
             "With the shipped bank few dev posts have a topically close record, so it could rarely apply:", "",
             *adapt_coverage(rows), ""]
    if not used:
        return lines + ["No rows with a memory of silver train yet (`fire.py run`)."]
    answered = sum(1 for r in adapted.values() if r.get("reply"))
    return lines + [
        f"With a memory of all silver train (both rounds, 3,862 records, `rebuttal memory build`; "
        f"runs/bench/fire-dev/silver-memory) a record of the post's category with a human reply was at "
        f"similarity >= {_adapt_cut()} (the memory's own space) for {len(used)} of the {answered} graded posts "
        "FIRE answered. On those posts, the same stored analyses and evidence, graded blind:", "",
        *grade_table([("fire (shipped: writes freely)", "fire", only(fire, used)),
                      ("fire, adapt=True, memory of silver train", "fire", only(adapted, used))], "independent"), ""]


def _adapt_cut() -> float:
    from rebuttal.fire.pipeline import FireSettings

    return FireSettings().adapt_min_similarity
