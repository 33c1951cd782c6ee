"""The server side of service_load.py: the app on the fake pipeline and the `rebuttal serve` child process
(one uvicorn process, or uvicorn's process manager with worker processes as `rebuttal serve --workers`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOAD_SCRIPT = Path(__file__).resolve().parent / "service_load.py"
BATCH = 500


def build_app(db: str, lease_s: float, pipeline_ms: float, real_model: str | None):
    """The real app (database rate limits, request log, batch worker) on a fake pipeline."""
    from rebuttal.server import ServerSettings, create_app

    settings = ServerSettings(db_url=db, rate_per_minute=1e9, rate_burst=1_000_000, max_batch=BATCH,
                              job_poll_s=0.2, job_lease_s=lease_s)
    if real_model:
        from rebuttal.server.services import PipelineServices

        services = PipelineServices({"backend": "llama", "model": real_model, "threads": 1})
    else:
        from rebuttal.server.fake import FakePipeline  # what `rebuttal serve --fake-pipeline` serves

        services = FakePipeline(pipeline_ms / 1000)
    return create_app(settings, services)


def worker_app():
    """The factory each worker process of `--serve --workers N` runs (as `rebuttal serve --workers` does)."""
    import json

    return build_app(**json.loads(os.environ["REBUTTAL_BENCH_SERVE"]))


def serve(args) -> None:
    """Child process: one uvicorn process, or a uvicorn process manager with `args.workers` workers."""
    import json

    import uvicorn

    workers = int(args.workers)
    if workers == 1:
        app = build_app(args.db, args.lease_s, args.pipeline_ms, args.real_model)
        return uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
    from rebuttal.server.commands import run_workers

    build_app(args.db, args.lease_s, args.pipeline_ms, args.real_model).state.rebuttal.db.dispose()  # migrate once
    os.environ["REBUTTAL_BENCH_SERVE"] = json.dumps({"db": args.db, "lease_s": args.lease_s,
                                                     "pipeline_ms": args.pipeline_ms, "real_model": args.real_model})
    run_workers("service_server:worker_app", workers=workers, host="127.0.0.1", port=args.port, log_level="warning")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, db: str, pipeline_ms: float = 0.0, lease_s: float = 2.0, real_model: str | None = None,
                 workers: int = 1):
        self.db, self.pipeline_ms, self.lease_s, self.real_model = db, pipeline_ms, lease_s, real_model
        self.workers = workers
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> None:
        import httpx

        command = [sys.executable, str(LOAD_SCRIPT), "--serve", "--db", self.db, "--port", str(self.port),
                   "--pipeline-ms", str(self.pipeline_ms), "--lease-s", str(self.lease_s),
                   "--workers", str(self.workers)]
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

    def cpu_seconds(self) -> float | None:
        """User + system CPU of the server and its worker processes so far (Linux /proc), else None."""
        if not os.path.isdir("/proc"):
            return None
        table = {}
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:  # the process ended meanwhile
                continue
            table[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))  # ppid, utime + stime
        tree, grew = {self.process.pid}, True
        while grew:
            added = {pid for pid, (ppid, _) in table.items() if ppid in tree} - tree
            tree, grew = tree | added, bool(added)
        return sum(table[pid][1] for pid in tree if pid in table) / os.sysconf("SC_CLK_TCK")

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
