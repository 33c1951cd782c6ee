"""Schema-driven fuzzing of `rebuttal serve --fake-pipeline` on 127.0.0.1 (issue #50).

    nice -n 19 .venv/bin/python benchmarks/service_fuzz.py     # writes benchmarks/results/service_fuzz.md
    ... --requests 2000 --out /tmp/fuzz.md                      # a shorter run

The server is the real command (`rebuttal serve --fake-pipeline`, SQLite in a temporary folder,
one process, rate limits out of the way) in a child process. schemathesis reads its OpenAPI
document and generates requests for every operation, valid ones (positive) and ones that break
the schema (negative), in rounds with fresh seeds until --requests are sent; a quarter of them
are made hostile (service_fuzz_cases.py: lone surrogates, NUL, bidi and invisible characters,
unreadable bodies, ids past 2^63-1). Most requests carry an admin key, some a submit key, none or
a wrong one. All go over ONE keep-alive httpx connection, so a response after which the server
closed the connection shows up as a new TCP connection ("dropped connections").

Reported: requests, statuses (overall and per operation), 5xx (must be 0), error bodies not in
the documented {"error", "detail"} shape (must be 0), dropped connections, client errors, and
errors in the server's log.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from service_fuzz_cases import hostile_body, hostile_path, response_problem  # noqa: E402
from service_server import free_port  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "service_fuzz.md"


class Stats:
    def __init__(self):
        self.requests, self.hostile, self.connects, self.client_errors = 0, 0, 0, 0
        self.statuses: collections.Counter = collections.Counter()
        self.per_operation: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.problems: list[str] = []
        self.closed_by_header, self.server_errors, self.bad_shape = 0, 0, 0

    def trace(self, event: str, info: dict) -> None:
        """httpx's trace hook: counts the TCP connections the client opens."""
        if event == "connection.connect_tcp.complete":
            self.connects += 1


def start_server(db_url: str, port: int, log_path: Path):
    import subprocess

    command = [sys.executable, "-c", "from rebuttal.cli import app; app()", "serve", "--fake-pipeline",
               "--no-preload", "--host", "127.0.0.1", "--port", str(port), "--db", db_url,
               "--rate-per-minute", "1000000000", "--rate-burst", "1000000", "--log-level", "warning"]
    log = log_path.open("w")
    process = subprocess.Popen(["nice", "-n", "19", *command], stdout=log, stderr=log, cwd=ROOT)
    return process


def wait_until_up(base_url: str, process, timeout: float = 120.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{base_url}/v1/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise RuntimeError("the server did not start; see its log")


def make_keys(db_url: str) -> dict[str, str]:
    from rebuttal.server.auth import create_key
    from rebuttal.server.db import Database

    db = Database(db_url)
    db.init()
    suffix = random.Random().getrandbits(48)
    keys = {role: create_key(db, f"fuzz-{role}-{suffix:x}", role) for role in ("admin", "submit")}
    db.dispose()
    return keys


def pick_auth(rng: random.Random, keys: dict[str, str]) -> dict[str, str]:
    roll = rng.random()
    if roll < 0.85:
        return {"Authorization": f"Bearer {keys['admin']}"}
    if roll < 0.93:
        return {"X-API-Key": keys["submit"]}
    return {} if roll < 0.97 else {"Authorization": "Bearer rbk_0000_wrong"}


def send(client, case, rng: random.Random, keys: dict, stats: Stats, hostile_share: float) -> None:
    import httpx

    kwargs = case.as_transport_kwargs(base_url=str(client.base_url).rstrip("/"))
    url, body = kwargs["url"], kwargs.get("data")
    headers = {k: v for k, v in kwargs.get("headers", {}).items() if k.lower() == "content-type"}
    if "json" in kwargs:
        import json

        body = json.dumps(kwargs["json"]).encode()
        headers.setdefault("Content-Type", "application/json")
    if rng.random() < hostile_share:
        stats.hostile += 1
        if case.method.upper() == "POST" and rng.random() < 0.7:
            body = hostile_body(kwargs.get("json", {}), rng)
            headers["Content-Type"] = "application/json"
        else:
            url = hostile_path(url, rng)
    headers.update(pick_auth(rng, keys))

    stats.requests += 1
    try:
        response = client.request(case.method.upper(), url, params=kwargs.get("params") or None, content=body,
                                  headers=headers, extensions={"trace": stats.trace})
    except httpx.HTTPError as exc:
        stats.client_errors += 1
        stats.problems.append(f"{case.operation.label}: {type(exc).__name__}: {exc}")
        return
    stats.statuses[response.status_code] += 1
    stats.per_operation[case.operation.label][response.status_code] += 1
    stats.closed_by_header += response.headers.get("connection", "").lower() == "close"
    problem = response_problem(response.status_code, response.headers.get("content-type", ""), response.content)
    if problem:
        stats.server_errors += response.status_code >= 500
        stats.bad_shape += response.status_code < 500
        stats.problems.append(f"{case.method.upper()} {url[:120]}: {problem}: {response.text[:200]!r}")


def fuzz(base_url: str, keys: dict, total: int, seed: int, per_round: int, hostile_share: float) -> Stats:
    import httpx
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode

    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    stats, rng = Stats(), random.Random(seed)
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    with httpx.Client(base_url=base_url, limits=limits, timeout=60) as client:
        for index in range(40):  # warm-up: review items to act on (ids 1..40)
            client.post("/v1/respond", json={"text": f"seed post {index}"},
                        headers={"Authorization": f"Bearer {keys['admin']}"}, extensions={"trace": stats.trace})
        round_number = 0
        while stats.requests < total:
            round_number += 1
            for operation in operations:
                for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                    @hypothesis_seed(seed * 1000 + round_number)
                    @given(case=operation.as_strategy(generation_mode=mode))
                    @settings(max_examples=per_round, database=None, deadline=None, phases=[Phase.generate],
                              suppress_health_check=list(HealthCheck))
                    def run(case):
                        send(client, case, rng, keys, stats, hostile_share)

                    try:
                        run()
                    except Unsatisfiable:  # nothing to break (an operation without parameters)
                        pass
            print(f"round {round_number}: {stats.requests} requests, {dict(stats.statuses)}", flush=True)
    return stats


def report(stats: Stats, args, seconds: float, log_errors: list[str], command: str) -> str:
    lines = [
        "# Service fuzzing (schemathesis over the OpenAPI document)", "",
        f"Command: `{command}`  ",
        f"Date: {datetime.date.today().isoformat()}; {seconds:.0f} s; seed {args.seed}; one server process "
        "(`rebuttal serve --fake-pipeline`, SQLite), one keep-alive client connection on 127.0.0.1.", "",
        "| what | count |", "|---|---|",
        f"| requests sent | {stats.requests} |",
        f"| of them made hostile (surrogates, NUL, bidi, unreadable bodies, huge ids) | {stats.hostile} |",
        f"| 5xx responses | {stats.server_errors} |",
        f"| error bodies not in the documented shape | {stats.bad_shape} |",
        f"| TCP connections the client opened | {stats.connects} |",
        f"| dropped connections (new TCP connections after the first) | {max(stats.connects - 1, 0)} |",
        f"| responses with `Connection: close` | {stats.closed_by_header} |",
        f"| client errors (no response) | {stats.client_errors} |",
        f"| errors in the server log | {len(log_errors)} |", "",
        "Statuses: " + ", ".join(f"{status}: {count}" for status, count in sorted(stats.statuses.items())), "",
        "| operation | requests | statuses |", "|---|---|---|",
    ]
    for label, counter in sorted(stats.per_operation.items()):
        shown = ", ".join(f"{status}: {count}" for status, count in sorted(counter.items()))
        lines.append(f"| `{label}` | {sum(counter.values())} | {shown} |")
    if stats.problems or log_errors:
        lines += ["", "First problems:", ""] + [f"- {p}" for p in (stats.problems + log_errors)[:20]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=50)
    parser.add_argument("--per-round", type=int, default=40, help="examples per operation and mode per round")
    parser.add_argument("--hostile", type=float, default=0.25, help="share of requests made hostile")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db_url, port = f"sqlite:///{Path(folder) / 'fuzz.db'}", free_port()
        keys = make_keys(db_url)
        log_path = Path(folder) / "server.log"
        server = start_server(db_url, port, log_path)
        try:
            wait_until_up(f"http://127.0.0.1:{port}", server)
            started = time.monotonic()
            stats = fuzz(f"http://127.0.0.1:{port}", keys, args.requests, args.seed, args.per_round, args.hostile)
            seconds = time.monotonic() - started
        finally:
            server.terminate()
            server.wait(30)
        log_errors = [line.strip() for line in log_path.read_text().splitlines()
                      if "ERROR" in line or "Traceback" in line or "Exception" in line]
    command = "nice -n 19 .venv/bin/python benchmarks/service_fuzz.py " + " ".join(sys.argv[1:])
    text = report(stats, args, seconds, log_errors, command.strip())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
