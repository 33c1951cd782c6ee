"""FIRE rows a changed gate or block library makes stale: dropped so that the next run of a
benchmark (fire.py, fire_heldout.py, fire_fresh.py) writes them again with today's pipeline."""

from __future__ import annotations

from pathlib import Path

from fire_rows import read_jsonl, write_jsonl


def drop_gate_changed(path: Path) -> int:
    """Drop the rows whose gate decision today's gate would change (it was retrained or its cuts
    recalibrated since: every post is scored again), so the next run writes them again: a post it
    stopped that it now passes, or one it passed that it now stops. Every other row stays, among
    them posts the LLM's vote stopped after the gate passed them (the pipeline decodes greedily, so
    a rerun mostly writes the same text, though llama.cpp's output can shift with its cache's
    contents). Returns how many were dropped."""
    from rebuttal.learned.gate import SHIPPED, HateGate
    from rebuttal.llm.embeddings import load_minilm

    if not path.exists():
        return 0
    rows = read_jsonl(path)
    gated = [row for row in rows if ((row.get("analysis") or {}).get("gate") or {}).get("hateful") is not None]
    if not gated:
        return 0
    texts = [row["text"] for row in gated]
    scored = HateGate.load(SHIPPED).scores(texts, load_minilm().encode(texts))  # the English blend reads MiniLM
    changed = {row["id"] for row, (score, used, _) in zip(gated, scored)
               if (score >= used.threshold) != row["analysis"]["gate"]["hateful"]}
    kept = [row for row in rows if row["id"] not in changed]
    write_jsonl(path, kept)
    return len(rows) - len(kept)


def drop_blocks_changed(path: Path) -> int:
    """Drop the English rows whose block candidates today's library would change (blocks added or
    edited, or who a post names read differently since), so the next run writes them again. The
    stored candidates are compared with compose_candidates' on the stored analysis. Returns how
    many were dropped."""
    from rebuttal.fire.blocks import BlockLibrary
    from rebuttal.fire.candidates import RIVALS
    from rebuttal.fire.compose import compose_candidates
    from rebuttal.learned.text import language
    from rebuttal.llm.embeddings import load_minilm
    from rebuttal.types import HateType

    if not path.exists():
        return 0
    rows, library = read_jsonl(path), BlockLibrary.load(load_minilm())

    def changed(row: dict) -> bool:
        analysis, reply = row.get("analysis") or {}, row.get("reply")
        if not reply or not analysis.get("category") or language(row["text"]) != "en":
            return False
        stored = [c["note"].split(";")[0] for c in reply.get("candidates", []) if c["origin"] == "blocks"]
        now = compose_candidates(library, row["text"], analysis["target_group"], HateType(analysis["category"]),
                                 RIVALS)
        return sorted(stored) != sorted(m.match.block.id for m in now)

    kept = [row for row in rows if not changed(row)]
    write_jsonl(path, kept)
    return len(rows) - len(kept)


def drop_stale(folder: Path) -> None:
    """Both drops on `folder`/fire.jsonl (the baselines answer every post: only FIRE's rows depend on
    the gate and the block library), saying how many rows go."""
    path = folder / "fire.jsonl"
    print(f"{drop_gate_changed(path)} FIRE rows whose gate decision today's gate changes and "
          f"{drop_blocks_changed(path)} whose block candidates today's library changes are run again")
