"""`rebuttal serve` under load and faults, on loopback, with a fake fast pipeline.

    nice -n 19 .venv/bin/python benchmarks/service_load.py            # writes benchmarks/results/service.md
    ... --workers 1,2   # the load levels with one server process, then with two (uvicorn --workers); the default
    nice -n 19 .venv/bin/python benchmarks/service_load.py --postgres postgresql+psycopg://...  # + the fault run there
    ... --postgres URL --postgres-load   # and the load levels on PostgreSQL too (wrk client)
    ... --real-model smollm2-135m   # also a short run of /v1/analyze with the tiny embedded model
    ... --real-model smollm2-135m --real-path /v1/parse --only-real --out benchmarks/results/service_real.md

Load: POST /v1/analyze, one post per request, from 1, 8 and 32 concurrent clients, for each
server process count in --workers and each load client in --client: Python threads (keep-alive,
a bounded number of requests and seconds per level) and wrk (C, one thread, keep-alive
connections, a fixed number of seconds; service_wrk.py). Reported: requests/s, client latency
p50/p95/p99, the server's own time per request (from the request log), the server processes'
CPU time per request (from /proc), error rate, and whether every accepted request has exactly
one stored result.

Fault: a 500-item batch with a pipeline taking a few ms per item; the server process is killed
(SIGKILL) part-way through and started again on the same database; reported: items lost
(no stored result when the job ends) and duplicated (more than one stored result).

The server runs in a child process (this script with --serve); everything binds to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from service_report import percentile, report  # noqa: E402
from service_server import BATCH, Server, make_key, serve  # noqa: E402
from service_wrk import available as wrk_available, wrk_level  # noqa: E402

LEVELS = ((1, 300), (8, 800), (32, 1600))  # (concurrent clients, requests); each level also stops at 60 s
LEVEL_SECONDS = 60.0
WRK_SECONDS = 8.0  # each wrk level runs this long


def load_level(url: str, key: str, clients: int, requests: int, tag: str, text: str,
               timeout: float = 30.0, path: str = "/v1/analyze") -> dict:
    import httpx

    latencies: list[float] = []
    statuses: dict[int, int] = {}
    accepted: list[str] = []
    lock = threading.Lock()
    counter = iter(range(requests))
    deadline = time.monotonic() + LEVEL_SECONDS

    def client_loop():
        with httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=timeout) as http:
            while time.monotonic() < deadline:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                post_id = f"{tag}-{i}"
                started = time.perf_counter()
                try:
                    status = http.post(path, json={"text": f"{text} #{i}", "id": post_id}).status_code
                except httpx.HTTPError:
                    status = 0
                elapsed = time.perf_counter() - started
                with lock:
                    latencies.append(elapsed)
                    statuses[status] = statuses.get(status, 0) + 1
                    if status == 200:
                        accepted.append(post_id)

    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    sent = sum(statuses.values())
    return {"clients": clients, "sent": sent, "wall_s": wall, "rps": sent / wall if wall else 0.0,
            "p50": percentile(latencies, 50) * 1000, "p95": percentile(latencies, 95) * 1000,
            "p99": percentile(latencies, 99) * 1000, "statuses": statuses,
            "errors": sent - statuses.get(200, 0), "accepted": accepted, "accepted_n": len(accepted), "tag": tag}


def stored_counts(db_url: str, client_ids: list[str] | None = None, job_id: str | None = None,
                  prefix: str | None = None) -> dict[str, int]:
    """Stored results per client id: of a job, of the given ids, or of ids starting with `prefix-`."""
    from sqlalchemy import func, select

    from rebuttal.server.db import Database, ResultRow

    db = Database(db_url)
    with db.session() as session:
        query = select(ResultRow.client_id, func.count()).group_by(ResultRow.client_id)
        if job_id:
            query = query.where(ResultRow.job_id == job_id)
        elif prefix:
            query = query.where(ResultRow.client_id.startswith(f"{prefix}-"))
        else:
            query = query.where(ResultRow.client_id.in_(client_ids))
        counts = dict(session.execute(query).all())
    db.dispose()
    return counts


def server_times(db_url: str, path: str = "/v1/analyze") -> list[float]:
    """The server's own milliseconds per request to `path`, oldest first (from the request log)."""
    from sqlalchemy import select

    from rebuttal.server.db import Database, RequestLog

    db = Database(db_url)
    with db.session() as session:
        rows = session.execute(select(RequestLog.created_at, RequestLog.duration_ms)
                               .where(RequestLog.path == path).order_by(RequestLog.created_at)).all()
    db.dispose()
    return [ms for _, ms in rows]


def logged_times(db_url: str, path: str, since: int, expected: int, timeout: float = 15.0) -> list[float]:
    """Server times logged after the first `since` rows, once `expected` more are there (rows are
    written by a background thread just after each response) or `timeout` has passed."""
    deadline = time.monotonic() + timeout
    while True:
        durations = server_times(db_url, path)[since:]
        if len(durations) >= expected or time.monotonic() > deadline:
            return durations
        time.sleep(0.2)


def exactly_once(db_url: str, row: dict) -> tuple[int, int]:
    """(missing, duplicated) among the accepted requests of a level. wrk does not report which
    requests were accepted, only how many: there every stored id of the level counts (a request
    still in flight when wrk stops may be stored without being counted as accepted)."""
    if "accepted" in row:
        counts = stored_counts(db_url, client_ids=row["accepted"])
        return (sum(1 for cid in row["accepted"] if counts.get(cid, 0) == 0),
                sum(1 for cid in row["accepted"] if counts.get(cid, 0) > 1))
    counts = stored_counts(db_url, prefix=row["tag"])
    return max(0, row["accepted_n"] - len(counts)), sum(1 for n in counts.values() if n > 1)


def run_load(db_url: str, text: str = "they are vermin", real_model: str | None = None,
             levels=LEVELS, path: str = "/v1/analyze", workers: int = 1, client: str = "threads") -> list[dict]:
    key = make_key(db_url)
    server = Server(db_url, real_model=real_model, workers=workers)
    server.start(timeout=300 if real_model else 60 * workers)
    rows = []
    try:
        if real_model:  # load the model and FIRE once, outside the measurement
            import httpx

            warm = httpx.post(f"{server.url}{path}", json={"text": text, "id": "warm-up"},
                              headers={"X-API-Key": key}, timeout=240)
            print(f"warm-up with {real_model}: {warm.status_code}", flush=True)
        logged = len(server_times(db_url, path))
        for clients, requests in levels:
            cpu_before = server.cpu_seconds()
            tag = f"{client}-w{workers}-c{clients}-{int(time.time())}"
            if client == "wrk":
                row = wrk_level(server.url, key, clients, WRK_SECONDS, tag, text, path)
                time.sleep(0.5)  # the requests in flight when wrk stopped finish (and are logged) first
            else:
                row = load_level(server.url, key, clients, requests, tag, text,
                                 timeout=120 if real_model else 30, path=path)
            cpu_after = server.cpu_seconds()
            answered = row["sent"] - row["statuses"].get(0, 0)
            row["server_ms"] = logged_times(db_url, path, logged, answered)
            logged += len(row["server_ms"])
            row["cpu_ms"] = (None if cpu_before is None or cpu_after is None
                             else (cpu_after - cpu_before) * 1000 / max(1, row["sent"]))
            row["missing"], row["duplicated"] = exactly_once(db_url, row)
            row["path"], row["workers"], row["client"] = path, workers, client
            row["db"] = db_url.split(":", 1)[0].split("+", 1)[0]
            rows.append(row)
            print(f"{client}: {workers} worker(s), {clients:>3} clients: {row['sent']} requests, {row['rps']:.0f}/s, "
                  f"p95 {row['p95']:.1f} ms, server p95 {percentile(row['server_ms'], 95):.1f} ms, "
                  f"errors {row['errors']}, missing {row['missing']}, duplicated {row['duplicated']}", flush=True)
    finally:
        server.stop()
    return rows


def run_fault(db_url: str, kill_after: int = 150, pipeline_ms: float = 8.0, lease_s: float = 2.0) -> dict:
    """A 500-item batch; SIGKILL the server once `kill_after` items are done; start it again."""
    import httpx

    key = make_key(db_url)
    server = Server(db_url, pipeline_ms=pipeline_ms, lease_s=lease_s)
    server.start()
    items = [{"text": f"they are vermin #{i}", "id": f"item-{i}"} for i in range(BATCH)]
    headers = {"X-API-Key": key}
    job = httpx.post(f"{server.url}/v1/analyze", json={"items": items}, headers=headers, timeout=60).json()
    job_id, done_at_kill = job["job_id"], 0
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done_at_kill = httpx.get(f"{server.url}/v1/jobs/{job_id}", headers=headers, timeout=10).json()["done"]
            if done_at_kill >= kill_after:
                break
            time.sleep(0.05)
        server.kill()
        killed_at = time.monotonic()
        server.start()
        status: dict = {}
        while time.monotonic() < killed_at + 180:
            status = httpx.get(f"{server.url}/v1/jobs/{job_id}", headers=headers, timeout=10).json()
            if status["status"] == "done":
                break
            time.sleep(0.2)
        recovered_s = time.monotonic() - killed_at
    finally:
        server.stop()
    counts = stored_counts(db_url, job_id=job_id)
    wanted = [item["id"] for item in items]
    row = {"db": db_url.split(":", 1)[0], "items": BATCH, "done_at_kill": done_at_kill,
           "status": status.get("status"), "restarts": status.get("restarts"), "errors": status.get("errors"),
           "lost": sum(1 for cid in wanted if counts.get(cid, 0) == 0),
           "duplicated": sum(1 for cid in wanted if counts.get(cid, 0) > 1), "recovered_s": recovered_s,
           "pipeline_ms": pipeline_ms, "lease_s": lease_s}
    print(f"fault run ({row['db']}): killed at {done_at_kill}/{BATCH}, job {row['status']} after "
          f"{recovered_s:.1f} s, lost {row['lost']}, duplicated {row['duplicated']}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--pipeline-ms", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--lease-s", type=float, default=2.0, help=argparse.SUPPRESS)
    parser.add_argument("--postgres", help="also run the fault run on this PostgreSQL URL (it is written to)")
    parser.add_argument("--postgres-load", action="store_true",
                        help="also the load levels on --postgres, with the wrk client (each --workers count)")
    parser.add_argument("--real-model", help="also a short load run with this embedded model, e.g. smollm2-135m")
    parser.add_argument("--real-requests", type=int, default=6, help="requests for the real-model run")
    parser.add_argument("--real-path", default="/v1/analyze", choices=("/v1/analyze", "/v1/parse"),
                        help="endpoint for the real-model run")
    parser.add_argument("--only-real", action="store_true", help="skip the fake-pipeline load and fault runs")
    parser.add_argument("--workers", default="1,2",
                        help="server process counts for the load levels, comma-separated (uvicorn --workers); "
                             "with --serve, the one count to run")
    parser.add_argument("--client", default="threads,wrk",
                        help="load clients, comma-separated: threads (Python) and/or wrk (skipped when not installed)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "service.md"))
    args = parser.parse_args()
    if args.serve:
        return serve(args)
    load_average = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    with tempfile.TemporaryDirectory(prefix="rebuttal-service-") as folder:
        load = []
        clients = [c for c in args.client.split(",") if c != "wrk" or wrk_available()]
        if "wrk" in args.client and "wrk" not in clients:
            print("wrk is not installed (apt-get install wrk): its load levels are skipped", flush=True)
        for client in ([] if args.only_real else clients):
            for workers in [int(n) for n in args.workers.split(",")]:
                load += run_load(f"sqlite:///{folder}/load-{client}-{workers}.db", workers=workers, client=client)
        if args.postgres and args.postgres_load and "wrk" in clients:
            for workers in [int(n) for n in args.workers.split(",")]:
                load += run_load(args.postgres, workers=workers, client="wrk")
        faults = [] if args.only_real else [run_fault(f"sqlite:///{folder}/fault.db")]
        if args.postgres and not args.only_real:
            faults.append(run_fault(args.postgres))
        real = []
        if args.real_model:
            real = run_load(f"sqlite:///{folder}/real.db", real_model=args.real_model,
                            levels=((1, args.real_requests),), path=args.real_path)
    lines = report(load, faults, real, args.real_model, LEVEL_SECONDS, WRK_SECONDS, load_average=load_average)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {os.path.relpath(args.out)}")


if __name__ == "__main__":
    main()
