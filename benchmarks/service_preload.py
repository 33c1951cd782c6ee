"""Cheap calls (health, a job's status) at 32 clients while the real model is loaded (issue 50):
their p99 was 230-290 ms with the model preloaded against 27-66 ms with `--no-preload`.

Starts `rebuttal serve` (embedded model, SQLite in a temporary folder) in three settings: without
the preload; preloaded as before this change (`freeze_long_lived` patched out: the ~0.5 M
objects the pipeline loads after the server froze its start-up heap stay in the collector's
reach); preloaded with the pipeline frozen once loaded (services.freeze_long_lived). Each waits
for the preload to finish, then wrk drives GET /v1/health and GET /v1/jobs/{id} (a job that does
not exist: key check, role, database read, 404) with 32 keep-alive connections.

    nice -n 5 python benchmarks/service_preload.py     # ~7 min; benchmarks/results/service_preload.md
"""

from __future__ import annotations

import argparse
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "service_preload.md"
SETTINGS = {
    "no preload": ("", ["--no-preload"]),
    "preload, pipeline not frozen (before)": ("import rebuttal.server.services as s; s.freeze_long_lived = lambda: None; ",
                                              []),
    "preload, pipeline frozen (now)": ("", []),
}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s


def busy(pid: int, window: float = 5.0) -> bool:
    """Did the process use more than 5% of a core over `window` seconds (the preload still running)?"""
    start = cpu_seconds(pid)
    time.sleep(window)
    return cpu_seconds(pid) - start > 0.05 * window


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(prefix: str, *args: str) -> list[str]:
    return [sys.executable, "-c", prefix + "from rebuttal.cli import app; app()", *args]


def wrk(url: str, key: str, clients: int, seconds: int) -> dict:
    out = subprocess.run(["wrk", "-t1", f"-c{clients}", f"-d{seconds}s", "--latency", "-H", f"X-API-Key: {key}", url],
                         capture_output=True, text=True, check=True).stdout

    def ms(label: str) -> float:
        value, unit = re.search(rf"^\s*{label}\s+([\d.]+)(us|ms|s)\s*$", out, re.MULTILINE).groups()
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    requests = int(re.search(r"(\d+) requests in", out).group(1))
    codes = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"requests": requests, "rps": requests / seconds, "p50": ms("50%"), "p90": ms("90%"), "p99": ms("99%"),
            "non2xx": int(codes.group(1)) if codes else 0}


def measure(name: str, prefix: str, extra: list[str], args) -> list[dict]:
    folder = Path(tempfile.mkdtemp(prefix="preload-"))
    db = f"sqlite:///{folder / 'server.db'}"
    key = subprocess.run(cli("", "keys", "create", "probe", "--role", "submit", "--db", db), capture_output=True,
                         text=True, check=True, cwd=ROOT).stdout.strip().splitlines()[-1]
    port = free_port()
    log = (folder / "server.log").open("w")
    server = subprocess.Popen(cli(prefix, "serve", "--port", str(port), "--db", db, "--rate-per-minute", "1000000000",
                                  "--rate-burst", "1000000", "--log-level", "warning", *extra),
                              stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/v1/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        if not extra:  # wait for the preload, warm-up included: loaded, then the process goes idle
            while not httpx.get(f"{base}/v1/health", timeout=5).json().get("model_loaded") or busy(server.pid):
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"{name}: the preload did not finish; see {folder / 'server.log'}")
        time.sleep(3)
        health = httpx.get(f"{base}/v1/health", timeout=5).json()
        rows = []
        for path in ("/v1/health", "/v1/jobs/job-that-does-not-exist"):
            for run in range(args.runs):
                result = wrk(base + path, key, args.clients, args.seconds)
                rows.append({"setting": name, "path": path, "run": run + 1,
                             "model_loaded": health.get("model_loaded"), **result})
                print(rows[-1], flush=True)
        return rows
    finally:
        server.terminate()
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    rows = []
    for name, (prefix, extra) in SETTINGS.items():
        rows += measure(name, prefix, extra, args)
    lines = header("Cheap calls with the model loaded", split="synthetic requests: GET /v1/health and GET "
                   "/v1/jobs/{missing id} (key check, role, database read, 404); no posts",
                   model="the default embedded chat model (llama.cpp), preloaded or not; no model call runs",
                   memory="the shipped FIRE memory, MiniLM and learned models (loaded by the preload)")
    lines += [f"Setup: one `rebuttal serve` process, SQLite in a temporary folder; wrk on the same 2 shared cores, "
              f"{args.clients} keep-alive connections, {args.seconds} s per run, {args.runs} runs per path and "
              "setting, after the preload (warm-up included) finished.", "",
              "| setting | path | run | model loaded | requests | req/s | p50 ms | p90 ms | p99 ms | non-2xx |",
              "|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['setting']} | {r['path']} | {r['run']} | {r['model_loaded']} | {r['requests']} | "
                     f"{r['rps']:.0f} | {r['p50']:.1f} | {r['p90']:.1f} | {r['p99']:.1f} | {r['non2xx']} |")
    lines += ["", "The job path answers 404 by design (no such job): it measures the key check, the role and the "
              "database read. Non-2xx counts those 404s.", ""]
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
