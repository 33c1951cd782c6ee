"""Batch jobs: rows persisted first, then a background worker per process works through them.

Several workers (processes, app instances) may share one database. A worker claims an item
with a conditional UPDATE and a fresh `claim` token plus a lease (`lease_until`) that a
heartbeat thread renews while the item runs. A worker that dies stops renewing: once the lease
has passed, any worker's recovery puts the item back in the queue (counting a restart) until it
has been tried `max_attempts` times, then fails it visibly. Finishing is guarded by the claim
token in the same transaction that stores the result, so an item taken over by another worker
is never stored twice. A result that cannot be stored (database down) is kept in memory and
stored when the database is back; it is never dropped.

A pipeline failure that looks transient (a backend timeout or a refused connection) marks the
item `error` and `retryable`; `retry_failed` (POST /v1/jobs/{id}/retry) queues it again.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, func, select, update

from rebuttal.server.db import Database, Job, JobItem, ResultRow, new_id, utcnow
from rebuttal.server.review import store_result
from rebuttal.server.services import Services
from rebuttal.types import MAX_POST_CHARS, FireResult, InputError, SparResult, check_post

log = logging.getLogger("rebuttal.server.jobs")
KINDS = ("analyze", "respond", "parse")
RETRYABLE = "backend unavailable (retryable)"  # starts the message of a retryable failed item
TRANSIENT_NAMES = ("Timeout", "TimedOut", "ConnectError", "ConnectionError", "APIConnectionError")


def is_transient(exc: BaseException) -> bool:
    """A backend timeout or refused connection: worth retrying later (httpx, openai, stdlib)."""
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    return any(part in klass.__name__ for klass in type(exc).__mro__ for part in TRANSIENT_NAMES)


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
        prefix = RETRYABLE if is_transient(exc) else "pipeline error"
        return error_result(kind, clean, client_id, options, f"{prefix}: {type(exc).__name__}: {exc}")


def error_result(kind: str, text: Any, client_id: str | None, options: dict, message: str):
    text = text if isinstance(text, str) else repr(text)
    if kind == "parse":
        return SparResult(id=client_id, text=text, lang=options.get("lang", "en"),
                          track=options.get("track") or "default", status="error", message=message)
    return FireResult(id=client_id, text=text, status="error", message=message)


def create_job(db: Database, kind: str, items: list[tuple[str | None, str]], key_name: str,
               options: dict, request_id: str | None, max_chars: int = MAX_POST_CHARS) -> Job:
    """Store the job and its items. Each text is checked here (check_post): a bad one (empty, too
    long, a lone surrogate) is stored at once as a failed item with its error result, so it is
    reported in the job's results like any failed item and never stops the others."""
    with db.session(write=True) as session:
        job = Job(kind=kind, key_name=key_name, options=options, total=len(items), request_id=request_id)
        session.add(job)
        session.flush()
        rows, failed = [], 0
        for position, (client_id, text) in enumerate(items):
            try:
                rows.append(JobItem(job_id=job.id, position=position, client_id=client_id,
                                    text=check_post(text, max_chars=max_chars)))
            except InputError as exc:
                result = error_result(kind, text, client_id, options, str(exc))
                row, _ = store_result(session, kind, result, key_name=key_name, request_id=request_id,
                                      job_id=job.id)
                rows.append(JobItem(job_id=job.id, position=position, client_id=client_id, text=result.text,
                                    status="error", error=result.message, result_id=row.id))
                failed += 1
        session.add_all(rows)
        if failed:
            session.flush()
            _refresh_counts(session, job)
        return job


def recover_interrupted(db: Database, max_attempts: int) -> int:
    """Requeue items whose worker stopped renewing their lease (a crashed or killed process);
    items already tried `max_attempts` times fail instead. Returns how many were found."""
    now = utcnow()
    expired = (JobItem.status == "running") & (JobItem.lease_until.is_(None) | (JobItem.lease_until < now))
    with db.session(write=True) as session:
        failed = session.execute(
            update(JobItem).where(expired, JobItem.attempts >= max_attempts)
            .values(status="error", claim=None, lease_until=None)
            .returning(JobItem.id, JobItem.job_id, JobItem.attempts)).all()
        for item_id, _, attempts in failed:
            session.execute(update(JobItem).where(JobItem.id == item_id).values(
                error=f"interrupted by a server restart {attempts} times; giving up"))
        requeued = session.execute(
            update(JobItem).where(expired).values(status="queued", claim=None, lease_until=None)
            .returning(JobItem.job_id)).all()
        resumed = {row[0] for row in requeued}
        jobs = {row[1] for row in failed} | resumed
        for job_id in jobs:
            job = session.get(Job, job_id)
            job.restarts += 1
            if job_id in resumed:
                job.status = "queued"
            job.message = f"resumed after a server restart at {now.isoformat(timespec='seconds')}"
            log.warning("job %s was interrupted; resuming", job_id)
        session.flush()
        for job_id in jobs:
            _refresh_counts(session, session.get(Job, job_id))
        return len(failed) + len(requeued)


def retry_failed(db: Database, job_id: str) -> int:
    """Queue the job's retryable failed items (backend timeouts) again; returns how many."""
    with db.session(write=True) as session:
        count = session.execute(
            update(JobItem).where(JobItem.job_id == job_id, JobItem.status == "error", JobItem.retryable)
            .values(status="queued", retryable=False, error=None, claim=None, lease_until=None)).rowcount
        if count:
            job = session.get(Job, job_id)
            job.status, job.finished_at = "queued", None
            session.flush()
            _refresh_counts(session, job)
        return count


def _refresh_counts(session, job: Job) -> None:
    counts = dict(session.execute(
        select(JobItem.status, func.count()).where(JobItem.job_id == job.id).group_by(JobItem.status)).all())
    job.done = counts.get("done", 0) + counts.get("error", 0)
    job.errors = counts.get("error", 0)
    if job.done >= job.total:
        job.status, job.finished_at = "done", utcnow()


def finish_item(db: Database, item_id: int, claim: str, result, retryable: bool) -> bool:
    """Store the result and mark the item done/error, only if this claim still holds it.
    False (nothing stored) when another worker took the item over after our lease ran out."""
    failed = result.status == "error"
    with db.session(write=True) as session:
        item = session.get(JobItem, item_id)
        previous = item.result_id if item is not None else None
        owned = session.execute(
            update(JobItem).where(JobItem.id == item_id, JobItem.claim == claim, JobItem.status == "running")
            .values(status="error" if failed else "done", claim=None, lease_until=None,
                    error=result.message if failed else None, retryable=failed and retryable)).rowcount
        if not owned:
            return False
        job = session.get(Job, item.job_id)
        if previous:  # a retried item: its earlier error result is replaced, never duplicated
            session.execute(delete(ResultRow).where(ResultRow.id == previous, ResultRow.status == "error"))
        row, _ = store_result(session, job.kind, result, key_name=job.key_name, request_id=job.request_id,
                              job_id=job.id)
        session.execute(update(JobItem).where(JobItem.id == item_id).values(result_id=row.id))
        session.flush()
        session.expire(job)
        _refresh_counts(session, job)
    return True


class JobWorker:
    """One thread per process: the model is a single shared resource, so items run one after
    another here; several processes on one database share the queue safely (claims, leases)."""

    def __init__(self, db: Database, services: Services, *, poll_s: float = 1.0, max_chars: int = 5000,
                 max_attempts: int = 3, lease_s: float = 30.0):
        self.db, self.services = db, services
        self.poll_s, self.max_chars, self.max_attempts, self.lease_s = poll_s, max_chars, max_attempts, lease_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._claim: str | None = None  # the item being processed, renewed by the heartbeat
        self._unsaved: tuple | None = None  # a finished item whose result could not be stored yet
        self._next_recovery = 0.0

    def start(self) -> None:
        try:
            recover_interrupted(self.db, self.max_attempts)
        except Exception:  # noqa: BLE001 - the loop recovers again once the database answers
            log.exception("could not check for interrupted jobs at start")
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="rebuttal-jobs", daemon=True)
        self._thread.start()
        threading.Thread(target=self._heartbeat, name="rebuttal-jobs-lease", daemon=True).start()

    def notify(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            claim = self._claim
            if claim is None:
                continue
            try:
                with self.db.session(write=True) as session:
                    session.execute(update(JobItem).where(JobItem.claim == claim)
                                    .values(lease_until=utcnow() + timedelta(seconds=self.lease_s)))
            except Exception as exc:  # noqa: BLE001 - the next beat tries again
                log.warning("could not renew the lease of the running item: %s", type(exc).__name__)

    def _loop(self) -> None:
        import time

        while not self._stop.is_set():
            try:
                if time.monotonic() >= self._next_recovery:  # other processes may have died
                    self._next_recovery = time.monotonic() + self.lease_s
                    recover_interrupted(self.db, self.max_attempts)
                worked = self.step()
            except Exception as exc:  # noqa: BLE001 - keep the worker alive; the item stays visible
                log.warning("batch worker step failed (%s); retrying in %.1f s", type(exc).__name__, self.poll_s)
                worked = False
            if not worked:
                self._wake.wait(self.poll_s)
                self._wake.clear()

    def _claim_next(self) -> tuple | None:
        """Claim the oldest queued item: (item id, claim, kind, text, client id, options)."""
        with self.db.session(write=True) as session:
            item = session.scalars(
                select(JobItem).join(Job, Job.id == JobItem.job_id).where(JobItem.status == "queued")
                .order_by(Job.created_at, JobItem.position).limit(1)).first()
            if item is None:
                return None
            claim = new_id()
            # Claim the item only if it is still queued, so two workers never share one.
            claimed = session.execute(
                update(JobItem).where(JobItem.id == item.id, JobItem.status == "queued")
                .values(status="running", attempts=JobItem.attempts + 1, claim=claim,
                        lease_until=utcnow() + timedelta(seconds=self.lease_s))).rowcount
            if not claimed:
                return ()
            job = session.get(Job, item.job_id)
            if job.status == "queued":
                job.status, job.started_at = "running", job.started_at or utcnow()
            return item.id, claim, job.kind, item.text, item.client_id, dict(job.options or {})

    def step(self) -> bool:
        """Process the next queued item; False when there is nothing to do."""
        if self._unsaved is not None:
            finish_item(self.db, *self._unsaved)  # raises while the database is still away
            self._unsaved, self._claim = None, None
            return True
        claimed = self._claim_next()
        if not claimed:
            return claimed is not None
        item_id, claim, kind, text, client_id, options = claimed
        self._claim = claim
        result = run_one(self.services, kind, text, client_id, options, self.max_chars)
        retryable = result.status == "error" and (result.message or "").startswith(RETRYABLE)
        self._unsaved = (item_id, claim, result, retryable)
        if not finish_item(self.db, *self._unsaved):
            log.warning("item %s was taken over by another worker; its result here is dropped", item_id)
        self._unsaved, self._claim = None, None
        return True
