"""Storing results and the human review queue: nothing is posted before a person approves it.

Only FIRE results with a reply and a hateful analysis are queued; everything else is stored
but never queued. Every reviewer action writes an audit entry with the key's name and role and
before/after snapshots.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from rebuttal.server.db import AuditEntry, ResultRow, ReviewItem, new_id, utcnow
from rebuttal.types import FireResult, InputError, SparResult, clean_text

STATUSES = ("pending", "approved", "rejected")
MAX_REPLY_CHARS = 5000
MAX_REASON_CHARS = 2000


class ReviewError(ValueError):
    """A review action that cannot be applied (unknown item, empty text, already decided)."""

    def __init__(self, message: str, status_code: int = 409):
        super().__init__(message)
        self.status_code = status_code


def should_queue(result: FireResult | SparResult) -> bool:
    if not isinstance(result, FireResult) or result.reply is None or not result.reply.text.strip():
        return False
    if result.status not in ("ok", "flagged"):
        return False
    return result.analysis is None or result.analysis.is_hateful


def store_result(session: Session, kind: str, result: FireResult | SparResult, *, key_name: str | None,
                 request_id: str | None = None, job_id: str | None = None) -> tuple[ResultRow, ReviewItem | None]:
    """Insert the result (and queue it for review if `should_queue`). The returned row holds
    what was stored; it is not attached to the session (read it, do not add it)."""
    analysis = getattr(result, "analysis", None)
    memory = getattr(result, "memory", None)
    values = dict(
        id=new_id(), created_at=utcnow(), kind=kind, request_id=request_id, job_id=job_id, client_id=result.id,
        key_name=key_name, text=result.text, status=result.status,
        category=analysis.category.value if analysis else None,
        target_group=analysis.target_group if analysis else None,
        purity=memory.purity if memory else None,
        result=result.model_dump(mode="json", exclude={"trace"}),
        trace=result.trace.model_dump(mode="json"),
    )
    # A Core INSERT: the ORM's unit of work cost a third more CPU on every request.
    session.connection().execute(insert(ResultRow.__table__), values)
    row = ResultRow(**values)
    item = None
    if should_queue(result):
        item = ReviewItem(result_id=row.id, category=row.category, target_group=row.target_group,
                          original_reply=result.reply.text, reply=result.reply.text)
        session.add(item)
        session.flush()
        _audit(session, item, "system", "queued", {}, _snapshot(item))
    return row, item


def _snapshot(item: ReviewItem) -> dict:
    return {"status": item.status, "reply": item.reply, "edited": item.edited,
            "reject_reason": item.reject_reason}


def _audit(session: Session, item: ReviewItem, actor: str, action: str, before: dict, after: dict,
           role: str | None = None) -> None:
    session.add(AuditEntry(review_id=item.id, actor=actor, actor_role=role, action=action, before=before,
                           after=after))


def _get(session: Session, review_id: int) -> ReviewItem:
    item = session.get(ReviewItem, review_id)
    if item is None:
        raise ReviewError(f"review item {review_id} not found", 404)
    return item


def _clean(text: str | None, field: str) -> str:
    """The free-text rule posts follow (rebuttal.types.clean_text): a lone surrogate is a 422."""
    try:
        return clean_text(text or "", field).strip()
    except InputError as exc:
        raise ReviewError(str(exc), 422) from None


def _clean_reply(text: str | None) -> str:
    text = _clean(text, "text")
    if not text:
        raise ReviewError("the reply text is empty", 422)
    if len(text) > MAX_REPLY_CHARS:
        raise ReviewError(f"the reply has {len(text)} characters; the limit is {MAX_REPLY_CHARS}", 422)
    return text


def edit(session: Session, review_id: int, actor: str, text: str, role: str | None = None) -> ReviewItem:
    """Change the reply text; the original generated reply is kept in `original_reply`."""
    item = _get(session, review_id)
    text = _clean_reply(text)
    if item.status != "pending":
        raise ReviewError(f"review item {review_id} is already {item.status}; only pending items can change")
    if text == item.reply:
        return item
    before = _snapshot(item)
    item.reply, item.edited, item.updated_at = text, text != item.original_reply, utcnow()
    _audit(session, item, actor, "edit", before, _snapshot(item), role)
    return item


def approve(session: Session, review_id: int, actor: str, text: str | None = None,
            role: str | None = None) -> ReviewItem:
    """Approve, optionally with a final edit (recorded as its own audit entry first)."""
    item = _get(session, review_id)
    if item.status != "pending":
        raise ReviewError(f"review item {review_id} is already {item.status}")
    if text is not None:
        edit(session, review_id, actor, text, role)
    before = _snapshot(item)
    item.status, item.reviewer = "approved", actor
    item.decided_at = item.updated_at = utcnow()
    _audit(session, item, actor, "approve", before, _snapshot(item), role)
    return item


def reject(session: Session, review_id: int, actor: str, reason: str, role: str | None = None) -> ReviewItem:
    item = _get(session, review_id)
    reason = _clean(reason, "reason")
    if not reason:
        raise ReviewError("a rejection needs a reason", 422)
    if len(reason) > MAX_REASON_CHARS:
        raise ReviewError(f"the reason is longer than {MAX_REASON_CHARS} characters", 422)
    if item.status != "pending":
        raise ReviewError(f"review item {review_id} is already {item.status}")
    before = _snapshot(item)
    item.status, item.reviewer, item.reject_reason = "rejected", actor, reason
    item.decided_at = item.updated_at = utcnow()
    _audit(session, item, actor, "reject", before, _snapshot(item), role)
    return item


@dataclass
class QueuePage:
    items: list[tuple[ReviewItem, ResultRow]]
    total: int


def list_queue(session: Session, status: str | None = "pending", category: str | None = None,
               limit: int = 50, offset: int = 0) -> QueuePage:
    query = select(ReviewItem, ResultRow).join(ResultRow, ResultRow.id == ReviewItem.result_id)
    count = select(func.count(ReviewItem.id))
    if status:
        query, count = query.where(ReviewItem.status == status), count.where(ReviewItem.status == status)
    if category:
        query, count = query.where(ReviewItem.category == category), count.where(ReviewItem.category == category)
    rows = session.execute(query.order_by(ReviewItem.id).limit(limit).offset(offset)).all()
    return QueuePage(items=[(r[0], r[1]) for r in rows], total=session.scalar(count) or 0)


def audit_log(session: Session, review_id: int) -> list[AuditEntry]:
    return list(session.scalars(select(AuditEntry).where(AuditEntry.review_id == review_id).order_by(AuditEntry.id)))


def item_view(item: ReviewItem, result: ResultRow, audit: list[AuditEntry] | None = None) -> dict:
    """Everything a reviewer needs about one item, as JSON-able data."""
    stored = result.result or {}
    view = {
        "id": item.id, "status": item.status, "category": item.category, "target_group": item.target_group,
        "purity": result.purity, "text": result.text, "reply": item.reply, "original_reply": item.original_reply,
        "edited": item.edited, "reject_reason": item.reject_reason, "reviewer": item.reviewer,
        "created_at": item.created_at.isoformat(), "updated_at": item.updated_at.isoformat(),
        "result_id": result.id, "client_id": result.client_id, "result_status": result.status,
        "analysis": stored.get("analysis"), "memory": stored.get("memory"),
        "evidence": stored.get("evidence") or [],
        "strategy": (stored.get("reply") or {}).get("strategy"),
        "cited_evidence_ids": (stored.get("reply") or {}).get("cited_evidence_ids") or [],
        "flags": (result.trace or {}).get("flags") or [],
        "checks": (stored.get("reply") or {}).get("checks") or [],
        # the replies FIRE considered, the kept one first, and why it was kept (fire/candidates.py)
        "candidates": (stored.get("reply") or {}).get("candidates") or [],
        "chosen_because": (stored.get("reply") or {}).get("chosen_because") or "",
        "steps": (result.trace or {}).get("steps") or [],  # what each stage did, its notes included
    }
    if audit is not None:
        view["audit"] = [audit_view(entry) for entry in audit]
    return view


def audit_view(entry: AuditEntry) -> dict:
    return {"actor": entry.actor, "role": entry.actor_role, "action": entry.action, "at": entry.at.isoformat(),
            "before": entry.before, "after": entry.after}


EXPORT_FIELDS = ("review_id", "result_id", "client_id", "status", "category", "target_group", "text",
                 "reply", "original_reply", "edited", "reviewer", "decided_at", "reject_reason",
                 "cited_evidence_ids")


def export_rows(session: Session, status: str = "approved") -> Iterator[dict]:
    if status not in STATUSES:
        raise ReviewError(f"status must be one of {', '.join(STATUSES)}", 422)
    query = (select(ReviewItem, ResultRow).join(ResultRow, ResultRow.id == ReviewItem.result_id)
             .where(ReviewItem.status == status).order_by(ReviewItem.id))
    for item, result in session.execute(query).yield_per(200):
        yield {
            "review_id": item.id, "result_id": result.id, "client_id": result.client_id,
            "status": item.status, "category": item.category, "target_group": item.target_group,
            "text": result.text, "reply": item.reply, "original_reply": item.original_reply,
            "edited": item.edited, "reviewer": item.reviewer,
            "decided_at": item.decided_at.isoformat() if item.decided_at else None,
            "reject_reason": item.reject_reason,
            "cited_evidence_ids": ((result.result or {}).get("reply") or {}).get("cited_evidence_ids") or [],
        }


def format_export(rows: Iterator[dict], fmt: str) -> Iterator[str]:
    """JSONL (one object per line) or CSV (header row; the id list joined with spaces)."""
    if fmt == "jsonl":
        for row in rows:
            yield json.dumps(row, ensure_ascii=False) + "\n"
        return
    if fmt != "csv":
        raise ReviewError("format must be jsonl or csv", 422)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EXPORT_FIELDS)
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, "cited_evidence_ids": " ".join(row["cited_evidence_ids"])})
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()
