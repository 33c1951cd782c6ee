"""Batch jobs: rows persisted first, then one background thread works through them.

A restart finds items left `running` by a crash: they go back to the queue (the job records a
restart) until they have been tried `max_item_attempts` times, then fail visibly.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy import func, select, update

from rebuttal.server.db import Database, Job, JobItem, utcnow
from rebuttal.server.review import store_result
from rebuttal.server.services import Services
from rebuttal.types import FireResult, InputError, SparResult, check_post

log = logging.getLogger("rebuttal.server.jobs")
KINDS = ("analyze", "respond", "parse")


def call_pipeline(services: Services, kind: str, text: str, client_id: str | None, options: dict):
    if kind == "parse":
        return services.parse(text, lang=options.get("lang", "en"), track=options.get("track"), id=client_id)
    return getattr(services, kind)(text, id=client_id)


def run_one(services: Services, kind: str, text: str, client_id: str | None, options: dict,
            max_chars: int) -> FireResult | SparResult:
    """Call the pipeline; bad input or a pipeline crash becomes an error result, never a raise."""
    try:
        clean = check_post(text, max_chars=max_chars)
    except InputError as exc:
        return error_result(kind, text, client_id, options, str(exc))
    try:
        return call_pipeline(services, kind, clean, client_id, options)
    except Exception as exc:  # noqa: BLE001 - a crashing item must not stop the batch
        log.warning("%s failed on item %s: %s", kind, client_id, type(exc).__name__)
        return error_result(kind, clean, client_id, options, f"pipeline error: {type(exc).__name__}: {exc}")


def error_result(kind: str, text: Any, client_id: str | None, options: dict, message: str):
    text = text if isinstance(text, str) else repr(text)
    if kind == "parse":
        return SparResult(id=client_id, text=text, lang=options.get("lang", "en"),
                          track=options.get("track") or "default", status="error", message=message)
    return FireResult(id=client_id, text=text, status="error", message=message)


def create_job(db: Database, kind: str, items: list[tuple[str | None, str]], key_name: str,
               options: dict, request_id: str | None) -> Job:
    with db.session() as session:
        job = Job(kind=kind, key_name=key_name, options=options, total=len(items), request_id=request_id)
        session.add(job)
        session.flush()
        session.add_all(JobItem(job_id=job.id, position=i, client_id=cid, text=text)
                        for i, (cid, text) in enumerate(items))
        return job


def recover_interrupted(db: Database, max_attempts: int) -> int:
    """Requeue items a previous process left running; returns how many were found."""
    with db.session() as session:
        stuck = session.scalars(select(JobItem).where(JobItem.status == "running")).all()
        jobs: set[str] = set()
        for item in stuck:
            jobs.add(item.job_id)
            if item.attempts >= max_attempts:
                item.status = "error"
                item.error = f"interrupted by a server restart {item.attempts} times; giving up"
            else:
                item.status = "queued"
        for job in session.scalars(select(Job).where(Job.status == "running")):
            jobs.add(job.id)
        for job_id in jobs:
            job = session.get(Job, job_id)
            job.restarts += 1
            job.status = "queued"
            job.message = f"resumed after a server restart at {utcnow().isoformat(timespec='seconds')}"
            log.warning("job %s was interrupted; resuming", job_id)
        session.flush()
        for job_id in jobs:
            _refresh_counts(session, session.get(Job, job_id))
        return len(stuck)


def _refresh_counts(session, job: Job) -> None:
    counts = dict(session.execute(
        select(JobItem.status, func.count()).where(JobItem.job_id == job.id).group_by(JobItem.status)).all())
    job.done = counts.get("done", 0) + counts.get("error", 0)
    job.errors = counts.get("error", 0)
    if job.done >= job.total:
        job.status, job.finished_at = "done", utcnow()


class JobWorker:
    """One thread: the model is a single shared resource, so items run one after another."""

    def __init__(self, db: Database, services: Services, *, poll_s: float = 1.0, max_chars: int = 5000,
                 max_attempts: int = 3):
        self.db, self.services = db, services
        self.poll_s, self.max_chars, self.max_attempts = poll_s, max_chars, max_attempts
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        recover_interrupted(self.db, self.max_attempts)
        self._thread = threading.Thread(target=self._loop, name="rebuttal-jobs", daemon=True)
        self._thread.start()

    def notify(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                worked = self.step()
            except Exception:  # noqa: BLE001 - keep the worker alive; the item stays visible
                log.exception("batch worker step failed")
                worked = False
            if not worked:
                self._wake.wait(self.poll_s)
                self._wake.clear()

    def step(self) -> bool:
        """Process the next queued item; False when there is nothing to do."""
        with self.db.session() as session:
            item = session.scalars(
                select(JobItem).join(Job, Job.id == JobItem.job_id).where(JobItem.status == "queued")
                .order_by(Job.created_at, JobItem.position).limit(1)).first()
            if item is None:
                return False
            job = session.get(Job, item.job_id)
            # Claim the item only if it is still queued, so two workers never share one.
            claimed = session.execute(update(JobItem).where(JobItem.id == item.id, JobItem.status == "queued")
                                      .values(status="running", attempts=JobItem.attempts + 1)).rowcount
            if not claimed:
                return True
            if job.status == "queued":
                job.status, job.started_at = "running", job.started_at or utcnow()
            item_id, kind, options, text, client_id = item.id, job.kind, dict(job.options or {}), item.text, item.client_id
        result = run_one(self.services, kind, text, client_id, options, self.max_chars)
        with self.db.session() as session:
            item = session.get(JobItem, item_id)
            job = session.get(Job, item.job_id)
            row, _ = store_result(session, kind, result, key_name=job.key_name, request_id=job.request_id, job_id=job.id)
            item.result_id = row.id
            item.status = "error" if result.status == "error" else "done"
            item.error = result.message if result.status == "error" else None
            session.flush()
            _refresh_counts(session, job)
        return True
