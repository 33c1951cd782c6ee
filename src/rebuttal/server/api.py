"""JSON routes under /v1: pipelines (one text or a batch job), jobs, results, review queue."""

from __future__ import annotations

import logging
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import func, select

import rebuttal
from rebuttal.server import review
from rebuttal.server.app import ApiError, ServerState
from rebuttal.server.auth import Caller, verify_key
from rebuttal.server.db import Job, JobItem, ResultRow, ReviewItem
from rebuttal.server.jobs import call_pipeline, create_job, error_result
from rebuttal.types import InputError, check_post

router = APIRouter(prefix="/v1")
log = logging.getLogger("rebuttal.server.api")


def state_of(request: Request) -> ServerState:
    return request.app.state.rebuttal


def presented_key(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return request.headers.get("x-api-key")


def caller(request: Request) -> Caller:
    """Authenticate (401) and rate-limit (429) every /v1 call except health."""
    state = state_of(request)
    key = presented_key(request)
    if not key:
        raise ApiError(401, "missing API key: send `Authorization: Bearer <key>` or `X-API-Key: <key>`",
                       headers={"WWW-Authenticate": "Bearer"})
    who = verify_key(state.db, key)
    if who is None:
        raise ApiError(401, "invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"})
    request.state.key_name = who.name
    wait = state.limiter.acquire(who.key_id)
    if wait:
        retry = max(1, round(wait + 0.5))
        raise ApiError(429, f"rate limit of {state.settings.rate_per_minute:g} requests/minute "
                       f"(burst {state.settings.rate_burst}) exceeded; retry in {retry} s",
                       headers={"Retry-After": str(retry)}, retry_after_s=retry)
    return who


Who = Annotated[Caller, Depends(caller)]


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(description="the post")
    id: str | None = Field(None, max_length=200, description="your id, echoed back")


class PostsIn(BaseModel):
    """Either `text` (answered now) or `items` (a batch job answered through /v1/jobs)."""

    model_config = ConfigDict(extra="forbid")
    text: str | None = None
    id: str | None = Field(None, max_length=200)
    items: list[Item] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def one_or_batch(self):
        if (self.text is None) == (self.items is None):
            raise ValueError("send either `text` (one post) or `items` (a batch), not both or neither")
        return self


class ParseIn(PostsIn):
    lang: Literal["en", "zh"] = "en"
    track: str | None = Field(None, max_length=40)


class ReplyEdit(BaseModel):
    text: str


class Approval(BaseModel):
    text: str | None = Field(None, description="final edit applied before approving")


class Rejection(BaseModel):
    reason: str


def _submit(request: Request, who: Caller, kind: str, body: PostsIn, options: dict):
    state = state_of(request)
    if body.items is not None:
        if len(body.items) > state.settings.max_batch:
            raise ApiError(422, f"batch has {len(body.items)} items; the limit is {state.settings.max_batch}",
                           code="batch_too_large", limit=state.settings.max_batch)
        request.state.items = len(body.items)
        job = create_job(state.db, kind, [(i.id, i.text) for i in body.items], who.name, options,
                         request.state.request_id)
        request.state.job_id = job.id
        state.worker.notify()
        from fastapi.responses import JSONResponse

        return JSONResponse(status_code=202, content={
            "job_id": job.id, "status": job.status, "total": job.total,
            "status_url": f"/v1/jobs/{job.id}", "results_url": f"/v1/jobs/{job.id}/results"})
    request.state.items = 1
    try:
        text = check_post(body.text, max_chars=state.settings.max_text_chars)
    except InputError as exc:
        raise ApiError(422, f"text: {exc}", code="invalid_text") from None
    try:
        result = call_pipeline(state.services, kind, text, body.id, options)
        failure = None
    except Exception as exc:  # noqa: BLE001 - stored as an error result, answered with 503
        failure = f"the pipeline failed: {type(exc).__name__}: {exc}"
        log.warning("%s failed: %s", kind, type(exc).__name__)
        result = error_result(kind, text, body.id, options, failure)
    with state.db.session() as session:
        row, item = review.store_result(session, kind, result, key_name=who.name,
                                        request_id=request.state.request_id)
        row_id, review_id = row.id, item.id if item else None
    if failure:
        raise ApiError(503, failure, result_id=row_id)
    return {"result_id": row_id, "review_id": review_id, "result": result.model_dump(mode="json")}


@router.post("/analyze", summary="FIRE analysis (category, target, memory purity) of one post or a batch")
def analyze(request: Request, body: PostsIn, who: Who):
    return _submit(request, who, "analyze", body, {})


@router.post("/respond", summary="FIRE analysis, evidence and a reply queued for human review")
def respond(request: Request, body: PostsIn, who: Who):
    return _submit(request, who, "respond", body, {})


@router.post("/parse", summary="SPAR-Hate (target, argument, label) tuples of one post or a batch")
def parse(request: Request, body: ParseIn, who: Who):
    return _submit(request, who, "parse", body, {"lang": body.lang, "track": body.track})


@router.get("/health", summary="liveness, model, memory size, version; no key needed")
def health(request: Request):
    state = state_of(request)
    info = {"status": "ok", "version": rebuttal.__version__, "schema_version": state.schema_version}
    try:
        info.update(state.services.health())
    except Exception as exc:  # noqa: BLE001 - health must answer even if the model cannot
        info.update(status="degraded", services_error=type(exc).__name__)
    try:
        with state.db.session() as session:
            info["review_pending"] = session.scalar(
                select(func.count(ReviewItem.id)).where(ReviewItem.status == "pending"))
            info["jobs_active"] = session.scalar(
                select(func.count(Job.id)).where(Job.status.in_(("queued", "running"))))
        info["database"] = "ok"
    except Exception as exc:  # noqa: BLE001
        info.update(status="degraded", database=f"error: {type(exc).__name__}")
    return info


def _job_view(job: Job) -> dict:
    return {"job_id": job.id, "kind": job.kind, "status": job.status, "total": job.total, "done": job.done,
            "errors": job.errors, "restarts": job.restarts, "message": job.message, "options": job.options,
            "created_at": job.created_at.isoformat(),
            "started_at": job.started_at.isoformat() if job.started_at else None,
            "finished_at": job.finished_at.isoformat() if job.finished_at else None,
            "results_url": f"/v1/jobs/{job.id}/results"}


def _get_or_404(session, table, key, what: str):
    row = session.get(table, key)
    if row is None:
        raise ApiError(404, f"{what} {key} not found")
    return row


@router.get("/jobs/{job_id}", summary="status and progress of a batch job")
def job_status(request: Request, job_id: str, who: Who):
    with state_of(request).db.session() as session:
        return _job_view(_get_or_404(session, Job, job_id, "job"))


@router.get("/jobs/{job_id}/results", summary="results of a batch job, in input order, paged")
def job_results(request: Request, job_id: str, who: Who, offset: Annotated[int, Query(ge=0)] = 0,
                limit: Annotated[int, Query(ge=1, le=500)] = 100):
    with state_of(request).db.session() as session:
        job = _get_or_404(session, Job, job_id, "job")
        rows = session.execute(
            select(JobItem, ResultRow, ReviewItem.id)
            .outerjoin(ResultRow, ResultRow.id == JobItem.result_id)
            .outerjoin(ReviewItem, ReviewItem.result_id == ResultRow.id)
            .where(JobItem.job_id == job_id).order_by(JobItem.position).offset(offset).limit(limit)).all()
        items = [{
            "position": item.position, "id": item.client_id, "status": item.status, "error": item.error,
            "result_id": result.id if result else None, "review_id": review_id,
            "result": {**result.result, "trace": result.trace} if result else None,
        } for item, result, review_id in rows]
        return {**_job_view(job), "offset": offset, "items": items}


@router.get("/results/{result_id}", summary="one stored result with its trace")
def get_result(request: Request, result_id: str, who: Who):
    with state_of(request).db.session() as session:
        row = _get_or_404(session, ResultRow, result_id, "result")
        return {"result_id": row.id, "kind": row.kind, "created_at": row.created_at.isoformat(),
                "key_name": row.key_name, "job_id": row.job_id, "result": {**row.result, "trace": row.trace}}


@router.get("/review/export", summary="reviewed replies as JSONL or CSV")
def export(request: Request, who: Who, status: Literal["approved", "rejected", "pending"] = "approved",
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
def review_queue(request: Request, who: Who, status: Literal["pending", "approved", "rejected"] | None = "pending",
                 category: str | None = None, offset: Annotated[int, Query(ge=0)] = 0,
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
def review_item(request: Request, review_id: int, who: Who):
    with state_of(request).db.session() as session:
        item = _get_or_404(session, ReviewItem, review_id, "review item")
        return review.item_view(item, session.get(ResultRow, item.result_id), review.audit_log(session, item.id))


@router.post("/review/{review_id}/edit", summary="change the reply; the original is kept")
def review_edit(request: Request, review_id: int, body: ReplyEdit, who: Who):
    return _review_action(request, review.edit, review_id, who.name, body.text)


@router.post("/review/{review_id}/approve", summary="approve the reply (optionally with a final edit)")
def review_approve(request: Request, review_id: int, who: Who, body: Approval | None = None):
    return _review_action(request, review.approve, review_id, who.name, body.text if body else None)


@router.post("/review/{review_id}/reject", summary="reject the reply with a reason")
def review_reject(request: Request, review_id: int, body: Rejection, who: Who):
    return _review_action(request, review.reject, review_id, who.name, body.reason)
