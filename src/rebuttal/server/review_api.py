"""JSON routes for the review queue under /v1/review: list, read, edit, approve, reject, export.
Every route needs a `review` (or `admin`) key; actions record the key's name and role."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from rebuttal.server import review
from rebuttal.server.access import Reviewer, state_of
from rebuttal.server.db import ResultRow, ReviewItem
from rebuttal.server.state import ApiError, FieldText, Offset, ReviewId

router = APIRouter(prefix="/v1")


class ReplyEdit(BaseModel):
    text: str


class Approval(BaseModel):
    text: str | None = Field(None, description="final edit applied before approving")


class Rejection(BaseModel):
    reason: str


@router.get("/review/export", summary="reviewed replies as JSONL or CSV")
def export(request: Request, who: Reviewer, status: Literal["approved", "rejected", "pending"] = "approved",
           format: Literal["jsonl", "csv"] = "jsonl"):  # noqa: A002 - the public parameter name
    db = state_of(request).db

    def lines():
        # Hand the server blocks of ~200 rows: one thread hop per row made exports slow.
        with db.session() as session:
            block: list[str] = []
            for chunk in review.format_export(review.export_rows(session, status), format):
                block.append(chunk)
                if len(block) >= 200:
                    yield "".join(block)
                    block.clear()
            yield "".join(block)

    media = "application/x-ndjson" if format == "jsonl" else "text/csv"
    filename = f"rebuttal-{status}.{format}"
    return StreamingResponse(lines(), media_type=media,
                             headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@router.get("/review", summary="the review queue, filtered by status and category")
def review_queue(request: Request, who: Reviewer, status: Literal["pending", "approved", "rejected"] | None = "pending",
                 category: FieldText | None = None, offset: Offset = 0,
                 limit: Annotated[int, Query(ge=1, le=500)] = 50):
    with state_of(request).db.session() as session:
        page = review.list_queue(session, status, category, limit, offset)
        return {"total": page.total, "offset": offset, "items": [review.item_view(i, r) for i, r in page.items]}


def _review_action(request: Request, action, *args):
    with state_of(request).db.session() as session:
        try:
            item = action(session, *args)
        except review.ReviewError as exc:
            raise ApiError(exc.status_code, str(exc)) from None
        session.flush()
        result = session.get(ResultRow, item.result_id)
        return review.item_view(item, result, review.audit_log(session, item.id))


@router.get("/review/{review_id}", summary="one review item with its evidence and audit log")
def review_item(request: Request, review_id: ReviewId, who: Reviewer):
    with state_of(request).db.session() as session:
        item = session.get(ReviewItem, review_id)
        if item is None:
            raise ApiError(404, f"review item {review_id} not found")
        return review.item_view(item, session.get(ResultRow, item.result_id), review.audit_log(session, item.id))


@router.post("/review/{review_id}/edit", summary="change the reply; the original is kept")
def review_edit(request: Request, review_id: ReviewId, body: ReplyEdit, who: Reviewer):
    return _review_action(request, review.edit, review_id, who.name, body.text, who.role)


@router.post("/review/{review_id}/approve", summary="approve the reply (optionally with a final edit)")
def review_approve(request: Request, review_id: ReviewId, who: Reviewer, body: Approval | None = None):
    return _review_action(request, review.approve, review_id, who.name, body.text if body else None, who.role)


@router.post("/review/{review_id}/reject", summary="reject the reply with a reason")
def review_reject(request: Request, review_id: ReviewId, body: Rejection, who: Reviewer):
    return _review_action(request, review.reject, review_id, who.name, body.reason, who.role)
