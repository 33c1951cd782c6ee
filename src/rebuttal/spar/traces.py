"""Teacher traces in the paper's distillation schema: one row per unit with ids, focus evidence,
the roles' tuples with rationales and quality, the conflict diagnosis, the final tuples, the
rationale and audit confidence, and chat-formatted supervision messages."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from rebuttal.data.vocab import Track
from rebuttal.spar.auditor import UnitAudit, ranked
from rebuttal.spar.pipeline import ParseDetail

STUDENT_SYSTEM = (
    "You parse hate speech. Judge only the text inside <focus>. Return JSON with a one-line "
    "rationale and tuples (target, argument copied exactly from the focus, harmful 0/1{group})."
)
_write_lock = threading.Lock()


def field_conflicts(audit: UnitAudit) -> list[str]:
    """Which fields differ between the two best clusters."""
    order = ranked(audit.clusters)
    if len(order) < 2:
        return []
    a, b = order[0].representative, order[1].representative
    fields = [("target", a.target, b.target), ("argument", a.argument, b.argument),
              ("label", a.label, b.label), ("group", a.group, b.group)]
    return [name for name, x, y in fields if x != y]


def _final_rationale(audit: UnitAudit) -> str:
    if audit.arbiter and audit.arbiter.get("rationale"):
        return audit.arbiter["rationale"]
    if audit.selected:
        return audit.selected[0].representative.rationale
    return ""


def teacher_rows(detail: ParseDetail, *, source: str | None = None, split: str | None = None,
                 teacher: str | None = None) -> list[dict]:
    result = detail.result
    quad = Track(result.track).has_group
    rows = []
    for audit in detail.audits:
        roles: dict[str, list[dict] | None] = {}
        for candidate in audit.candidates:
            roles.setdefault(candidate.role, []).append(candidate.as_dict())
        for role in audit.missing_roles:
            roles.setdefault(role, None)
        final = [t.model_dump(exclude_none=True) for t in audit.tuples]
        rationale = _final_rationale(audit)
        answer = {"rationale": rationale,
                  "tuples": [{"target": t["target"], "argument": t["argument"], "harmful": t["label"],
                              **({"group": t["group"]} if quad else {})} for t in final]}
        unit = audit.unit
        user = (f"Language: {result.lang}. Track: {result.track}. Target hint: {unit.canonical_target}\n"
                f"<<<POST\n{unit.focus_text}\nPOST>>>")
        rows.append({
            "sample_id": result.id, "group_id": unit.group_id, "local_group_id": unit.local_group_id,
            "source": source, "split": split, "language": result.lang, "track": result.track,
            "system": result.system, "teacher": teacher,
            "source_text": result.text, "focus_text": unit.focus_text, "group_text": unit.group_text,
            "canonical_target": unit.canonical_target, "segment_source": unit.source,
            "roles": roles,
            "lexicon_hits": sorted({h for c in audit.candidates for h in c.lexicon_hits}),
            "diagnosis": {
                "lane": audit.lane, "tags": audit.tags, "defects": audit.defects,
                "field_conflicts": field_conflicts(audit),
                "beacons": sorted({b for c in audit.clusters for b in c.beacons}),
                "clusters": [c.as_dict() for c in ranked(audit.clusters)],
                "regenerated_roles": audit.regenerated, "arbiter": audit.arbiter, "notes": audit.notes,
            },
            "final": final, "rationale": rationale, "audit_confidence": audit.confidence,
            "prompt_versions": detail.prompt_versions,
            "messages": [
                {"role": "system", "content": STUDENT_SYSTEM.format(group=", group" if quad else "")},
                {"role": "user", "content": user},
                {"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)},
            ],
        })
    return rows


def export_traces(rows: list[dict], path: str | Path) -> int:
    """Append rows to a JSONL file (thread-safe); returns how many were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _write_lock, path.open("a", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)
