"""JSON routes under /v1: pipelines (one text or a batch job), jobs and results.
The review queue's routes are in review_api.py, key management in admin_api.py."""

from __future__ import annotations

import logging
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import func, select
from starlette.concurrency import run_in_threadpool

import rebuttal
from rebuttal.server import review
from rebuttal.server.access import Submitter, check_owner, state_of
from rebuttal.server.auth import Caller
from rebuttal.server.db import ROLES, Job, JobItem, ResultRow, ReviewItem
from rebuttal.server.jobs import call_pipeline, create_job, error_result, is_transient, retry_failed
from rebuttal.server.state import ApiError, FieldText, Offset, ServerState
from rebuttal.types import InputError, check_post

router = APIRouter(prefix="/v1")
log = logging.getLogger("rebuttal.server.api")


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(description="the post (checked by check_post: a bad one becomes an error item)")
    id: FieldText | None = Field(None, max_length=200, description="your id, echoed back")


class PostsIn(BaseModel):
    """Either `text` (answered now) or `items` (a batch job answered through /v1/jobs)."""

    model_config = ConfigDict(extra="forbid")
    text: str | None = None
    id: FieldText | None = Field(None, max_length=200)
    items: list[Item] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def one_or_batch(self):
        if (self.text is None) == (self.items is None):
            raise ValueError("send either `text` (one post) or `items` (a batch), not both or neither")
        return self


class ParseIn(PostsIn):
    lang: Literal["en", "zh"] = "en"
    track: FieldText | None = Field(None, max_length=40)


def _start_job(request: Request, who: Caller, kind: str, body: PostsIn, options: dict) -> JSONResponse:
    state = state_of(request)
    if len(body.items) > state.settings.max_batch:
        raise ApiError(422, f"batch has {len(body.items)} items; the limit is {state.settings.max_batch}",
                       code="batch_too_large", limit=state.settings.max_batch)
    request.state.items = len(body.items)
    job = create_job(state.db, kind, [(i.id, i.text) for i in body.items], who.name, options,
                     request.state.request_id, max_chars=state.settings.max_text_chars)
    request.state.job_id = job.id
    state.worker.notify()
    return JSONResponse(status_code=202, content={
        "job_id": job.id, "status": job.status, "total": job.total,
        "status_url": f"/v1/jobs/{job.id}", "results_url": f"/v1/jobs/{job.id}/results"})


def _run_pipeline(state: ServerState, kind: str, text: str, id: str | None, options: dict):
    """The result, the failure message (None when it ran) and the Retry-After header for a failure."""
    try:
        return call_pipeline(state.services, kind, text, id, options), None, None
    except Exception as exc:  # noqa: BLE001 - stored as an error result, answered with 503
        failure = f"the pipeline failed: {type(exc).__name__}: {exc}"
        log.warning("%s failed: %s", kind, type(exc).__name__)
        retry_after = {"Retry-After": "5"} if is_transient(exc) else None
        return error_result(kind, text, id, options, failure), failure, retry_after


async def _submit(request: Request, who: Caller, kind: str, body: PostsIn, options: dict) -> JSONResponse:
    """A batch becomes a job (202); one post is answered now, its result stored first. The
    pipeline runs in the threadpool; the store is awaited on the event loop (writer.py)."""
    state = state_of(request)
    if body.items is not None:
        return await run_in_threadpool(_start_job, request, who, kind, body, options)
    request.state.items = 1
    try:
        text = check_post(body.text, max_chars=state.settings.max_text_chars)
    except InputError as exc:
        raise ApiError(422, str(exc), code="invalid_text") from None
    result, failure, retry_after = await run_in_threadpool(_run_pipeline, state, kind, text, body.id, options)
    row, item = await state.writes.run(lambda session: review.store_result(
        session, kind, result, key_name=who.name, request_id=request.state.request_id))
    row_id, review_id = row.id, item.id if item else None
    if failure:
        raise ApiError(503, failure, result_id=row_id, retryable=retry_after is not None, headers=retry_after)
    # Already JSON types: a JSONResponse skips FastAPI's second walk over the result (jsonable_encoder).
    return JSONResponse({"result_id": row_id, "review_id": review_id, "result": result.model_dump(mode="json")})


@router.post("/analyze", summary="FIRE analysis (category, target, memory purity) of one post or a batch")
async def analyze(request: Request, body: PostsIn, who: Submitter):
    return await _submit(request, who, "analyze", body, {})


@router.post("/respond", summary="FIRE analysis, evidence and a reply queued for human review")
async def respond(request: Request, body: PostsIn, who: Submitter):
    return await _submit(request, who, "respond", body, {})


@router.post("/parse", summary="SPAR-Hate (target, argument, label) tuples of one post or a batch")
async def parse(request: Request, body: ParseIn, who: Submitter):
    return await _submit(request, who, "parse", body, {"lang": body.lang, "track": body.track})


@router.get("/health", summary="liveness, model, memory size, version; no key needed")
def health(request: Request):
    state = state_of(request)
    info = {"status": "ok", "version": rebuttal.__version__, "schema_version": state.schema_version,
            "roles": list(ROLES)}
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


def _get_or_404(session, table, key, what: str, who: Caller):
    row = session.get(table, key)
    if row is None:
        raise ApiError(404, f"{what} {key} not found")
    check_owner(who, row.key_name, what, key)
    return row


@router.get("/jobs/{job_id}", summary="status and progress of a batch job")
def job_status(request: Request, job_id: FieldText, who: Submitter):
    with state_of(request).db.session() as session:
        return _job_view(_get_or_404(session, Job, job_id, "job", who))


@router.get("/jobs/{job_id}/results", summary="results of a batch job, in input order, paged")
def job_results(request: Request, job_id: FieldText, who: Submitter, offset: Offset = 0,
                limit: Annotated[int, Query(ge=1, le=500)] = 100):
    with state_of(request).db.session() as session:
        job = _get_or_404(session, Job, job_id, "job", who)
        rows = session.execute(
            select(JobItem, ResultRow, ReviewItem.id)
            .outerjoin(ResultRow, ResultRow.id == JobItem.result_id)
            .outerjoin(ReviewItem, ReviewItem.result_id == ResultRow.id)
            .where(JobItem.job_id == job_id).order_by(JobItem.position).offset(offset).limit(limit)).all()
        items = [{
            "position": item.position, "id": item.client_id, "status": item.status, "error": item.error,
            "retryable": item.retryable,
            "result_id": result.id if result else None, "review_id": review_id,
            "result": {**result.result, "trace": result.trace} if result else None,
        } for item, result, review_id in rows]
        return {**_job_view(job), "offset": offset, "items": items}


@router.get("/results/{result_id}", summary="one stored result with its trace")
def get_result(request: Request, result_id: FieldText, who: Submitter):
    with state_of(request).db.session() as session:
        row = _get_or_404(session, ResultRow, result_id, "result", who)
        return {"result_id": row.id, "kind": row.kind, "created_at": row.created_at.isoformat(),
                "key_name": row.key_name, "job_id": row.job_id, "result": {**row.result, "trace": row.trace}}




@router.post("/jobs/{job_id}/retry", summary="queue a job's retryable failed items (backend timeouts) again")
def job_retry(request: Request, job_id: FieldText, who: Submitter):
    state = state_of(request)
    with state.db.session() as session:
        _get_or_404(session, Job, job_id, "job", who)
    requeued = retry_failed(state.db, job_id)
    if requeued:
        state.worker.notify()
    with state.db.session() as session:
        return {**_job_view(session.get(Job, job_id)), "requeued": requeued}
