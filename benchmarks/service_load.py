"""`rebuttal serve` under load and faults, on loopback, with a fake fast pipeline.

    nice -n 19 .venv/bin/python benchmarks/service_load.py            # writes benchmarks/results/service.md
    nice -n 19 .venv/bin/python benchmarks/service_load.py --postgres postgresql+psycopg://...  # + the fault run there
    ... --real-model smollm2-135m   # also a short run of /v1/analyze with the tiny embedded model
    ... --real-model smollm2-135m --real-path /v1/parse --only-real --out benchmarks/results/service_real.md

Load: POST /v1/analyze, one post per request, from 1, 8 and 32 concurrent clients (threads,
keep-alive), a bounded number of requests and seconds per level. Reported: requests/s, client
latency p50/p95/p99, the server's own time per request (from the request log), error rate, and
whether every accepted request has exactly one stored result.

Fault: a 500-item batch with a pipeline taking a few ms per item; the server process is killed
(SIGKILL) part-way through and started again on the same database; reported: items lost
(no stored result when the job ends) and duplicated (more than one stored result).

The server runs in a child process (this script with --serve); everything binds to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

LEVELS = ((1, 300), (8, 800), (32, 1600))  # (concurrent clients, requests); each level also stops at 60 s
LEVEL_SECONDS = 60.0
BATCH = 500


class FakeFastPipeline:
    """Answers instantly (or after --pipeline-ms): measures the service, not a model."""

    def __init__(self, delay_s: float = 0.0):
        self.delay_s = delay_s

    def _result(self, text, id, reply):
        from rebuttal.types import Analysis, FireResult, HateType, Reply, Trace, TraceStep

        if self.delay_s:
            time.sleep(self.delay_s)
        trace = Trace(steps=[TraceStep(stage="analyst", model="fake-fast", prompt_version="none", latency_s=0.0)])
        analysis = Analysis(is_hateful=True, target_group="Immigrants", category=HateType.dehumanization,
                            reasoning="fake")
        answer = Reply(text="A calm answer.", strategy=HateType.dehumanization.strategy) if reply else None
        return FireResult(id=id, text=text, status="ok", trace=trace, analysis=analysis, reply=answer)

    def analyze(self, text, id=None):
        return self._result(text, id, reply=False)

    def respond(self, text, id=None):
        return self._result(text, id, reply=True)

    def parse(self, text, lang="en", track=None, id=None):
        raise NotImplementedError("the load test does not parse")

    def health(self):
        return {"model": "fake-fast", "model_loaded": True, "memory_size": None}


def serve(args) -> None:
    """Child process: the real app (database rate limits, request log, worker) on a fake pipeline."""
    import uvicorn

    from rebuttal.server import ServerSettings, create_app

    settings = ServerSettings(db_url=args.db, rate_per_minute=1e9, rate_burst=1_000_000, max_batch=BATCH,
                              job_poll_s=0.2, job_lease_s=args.lease_s)
    if args.real_model:
        from rebuttal.server.services import PipelineServices

        services = PipelineServices({"backend": "llama", "model": args.real_model, "threads": 1})
    else:
        services = FakeFastPipeline(args.pipeline_ms / 1000)
    uvicorn.run(create_app(settings, services), host="127.0.0.1", port=args.port, log_level="warning")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, db: str, pipeline_ms: float = 0.0, lease_s: float = 2.0, real_model: str | None = None):
        self.db, self.pipeline_ms, self.lease_s, self.real_model = db, pipeline_ms, lease_s, real_model
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> None:
        import httpx

        command = [sys.executable, __file__, "--serve", "--db", self.db, "--port", str(self.port),
                   "--pipeline-ms", str(self.pipeline_ms), "--lease-s", str(self.lease_s)]
        if self.real_model:
            command += ["--real-model", self.real_model]
        self.process = subprocess.Popen(["nice", "-n", "19", *command], cwd=ROOT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("the server did not start")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)  # no shutdown hooks: a crash
        self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


def make_key(db_url: str) -> str:
    from rebuttal.server.auth import create_key
    from rebuttal.server.db import Database

    db = Database(db_url)
    db.init()
    key = create_key(db, "load-test", "submit")
    db.dispose()
    return key


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


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
            "errors": sent - statuses.get(200, 0), "accepted": accepted, "tag": tag}


def stored_counts(db_url: str, client_ids: list[str] | None = None, job_id: str | None = None) -> dict[str, int]:
    from sqlalchemy import func, select

    from rebuttal.server.db import Database, ResultRow

    db = Database(db_url)
    with db.session() as session:
        query = select(ResultRow.client_id, func.count()).group_by(ResultRow.client_id)
        query = query.where(ResultRow.job_id == job_id) if job_id else query.where(ResultRow.client_id.in_(client_ids))
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


def run_load(db_url: str, text: str = "they are vermin", real_model: str | None = None,
             levels=LEVELS, path: str = "/v1/analyze") -> list[dict]:
    key = make_key(db_url)
    server = Server(db_url, real_model=real_model)
    server.start(timeout=300 if real_model else 60)
    rows = []
    try:
        if real_model:  # load the model and FIRE once, outside the measurement
            import httpx

            warm = httpx.post(f"{server.url}{path}", json={"text": text, "id": "warm-up"},
                              headers={"X-API-Key": key}, timeout=240)
            print(f"warm-up with {real_model}: {warm.status_code}", flush=True)
        logged = len(server_times(db_url, path))
        for clients, requests in levels:
            row = load_level(server.url, key, clients, requests, f"c{clients}-{int(time.time())}", text,
                             timeout=120 if real_model else 30, path=path)
            time.sleep(0.5)  # the request log row is written after the response
            durations = server_times(db_url, path)
            row["server_ms"] = durations[logged:]
            logged = len(durations)
            counts = stored_counts(db_url, client_ids=row["accepted"])
            row["missing"] = sum(1 for cid in row["accepted"] if counts.get(cid, 0) == 0)
            row["duplicated"] = sum(1 for cid in row["accepted"] if counts.get(cid, 0) > 1)
            row["path"] = path
            rows.append(row)
            print(f"{clients:>3} clients: {row['sent']} requests, {row['rps']:.0f}/s, p95 {row['p95']:.1f} ms, "
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


def report(load: list[dict], faults: list[dict], real: list[dict], real_model: str | None) -> list[str]:
    from provenance import header

    lines = header("Service under load and faults (`rebuttal serve`)",
                   split="synthetic posts (one fixed sentence with a counter); no dataset",
                   model=("fake fast pipeline (no model) for load and fault runs"
                          + (f"; {real_model} (llama.cpp, 1 thread) for the real-model row" if real_model else "")),
                   memory="none (the fake pipeline has no memory or encoder)"
                   + ("; the real-model /v1/analyze row uses FIRE's shipped memory with all-MiniLM-L6-v2"
                      if any(row["path"] == "/v1/analyze" for row in real) else ""))
    lines += [
        "Setup: one uvicorn process (`nice -n 19`, 127.0.0.1), SQLite in WAL mode in a temporary folder, "
        "rate limits in the database (every request takes a token; limits set high enough never to refuse), "
        "the request log on. The load client runs on the same 2 shared cores (threads, keep-alive), so "
        "client latency includes client-side queuing; `server p95` is the server's own time per request "
        "from its request log (authentication, role check, rate-limit token, pipeline, result stored).", "",
        "## Load: one post per request", "",
        "| clients | requests | req/s | p50 ms | p95 ms | p99 ms | server p50 ms | server p95 ms | errors "
        "| status codes | accepted with exactly one stored result |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in load + real:
        ok = len(row["accepted"]) - row["missing"] - row["duplicated"]
        codes = ", ".join(f"{code}: {n}" for code, n in sorted(row["statuses"].items()))
        label = f"{row['clients']}" + (f" (real model, {row['path']})" if row in real else "")
        lines.append(
            f"| {label} | {row['sent']} | {row['rps']:.3g} | {row['p50']:.1f} | {row['p95']:.1f} | {row['p99']:.1f} "
            f"| {percentile(row['server_ms'], 50):.1f} | {percentile(row['server_ms'], 95):.1f} "
            f"| {row['errors']} ({row['errors'] / max(1, row['sent']):.1%}) | {codes} "
            f"| {ok}/{len(row['accepted'])} (missing {row['missing']}, duplicated {row['duplicated']}) |")
    if load:
        top, one = load[-1], load[0]
        lines += ["", f"Reading: at {top['clients']} clients the server is saturated at {top['rps']:.0f} req/s, so a "
                  f"request mostly waits its turn (clients / throughput = {top['clients'] / top['rps'] * 1000:.0f} ms "
                  f"on average); the work per request, seen alone at 1 client, is {percentile(one['server_ms'], 50):.1f}"
                  f" ms (p50) / {percentile(one['server_ms'], 95):.1f} ms (p95) of server time."]
    if faults:
        lines += ["", "## Fault: SIGKILL during a 500-item batch, then restart on the same database", "",
                  "| database | items | done when killed | job after restart | restarts | item errors | lost "
                  "| duplicated | kill → job done (s) |", "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for row in faults:
        lines.append(f"| {row['db']} | {row['items']} | {row['done_at_kill']} | {row['status']} | {row['restarts']} "
                     f"| {row['errors']} | {row['lost']} | {row['duplicated']} | {row['recovered_s']:.1f} |")
    if faults:
        lease = faults[0]["lease_s"]
        lines += ["", f"The pipeline takes {faults[0]['pipeline_ms']:g} ms per item. The item running when the "
                  f"process died resumes once its lease ({lease:g} s here, `REBUTTAL_JOB_LEASE_S`, default 30 s) "
                  "has passed; restart time (process start, migrations check) is included. `restarts` is 0 when "
                  "no item happened to be in flight at the moment of the kill."]
    lines += ["", "Targets (issue 15): no 5xx and no lost result at 32 clients; server p95 overhead < 50 ms "
              "with the fake pipeline; 0 lost and 0 duplicated items in the fault run."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--pipeline-ms", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--lease-s", type=float, default=2.0, help=argparse.SUPPRESS)
    parser.add_argument("--postgres", help="also run the fault run on this PostgreSQL URL (it is written to)")
    parser.add_argument("--real-model", help="also a short load run with this embedded model, e.g. smollm2-135m")
    parser.add_argument("--real-requests", type=int, default=6, help="requests for the real-model run")
    parser.add_argument("--real-path", default="/v1/analyze", choices=("/v1/analyze", "/v1/parse"),
                        help="endpoint for the real-model run")
    parser.add_argument("--only-real", action="store_true", help="skip the fake-pipeline load and fault runs")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "service.md"))
    args = parser.parse_args()
    if args.serve:
        return serve(args)
    with tempfile.TemporaryDirectory(prefix="rebuttal-service-") as folder:
        load = [] if args.only_real else run_load(f"sqlite:///{folder}/load.db")
        faults = [] if args.only_real else [run_fault(f"sqlite:///{folder}/fault.db")]
        if args.postgres and not args.only_real:
            faults.append(run_fault(args.postgres))
        real = []
        if args.real_model:
            real = run_load(f"sqlite:///{folder}/real.db", real_model=args.real_model,
                            levels=((1, args.real_requests),), path=args.real_path)
    Path(args.out).write_text("\n".join(report(load, faults, real, args.real_model)) + "\n", encoding="utf-8")
    print(f"wrote {os.path.relpath(args.out)}")


if __name__ == "__main__":
    main()
