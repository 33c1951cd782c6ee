"""The markdown of benchmarks/results/service.md, from the rows service_load.py measured."""

from __future__ import annotations

import numpy as np

TARGET_MS = 50.0  # issue 15: server p95 overhead with the fake pipeline


def percentile(values: list[float], q: float) -> float:
    """numpy's percentile (q in percent)."""
    return float(np.percentile(values, q)) if len(values) else float("nan")


def _processes(counts: list[int]) -> str:
    return " and ".join(f"{n} uvicorn process" if n == 1 else f"{n} uvicorn worker processes" for n in counts)


def _http_stack() -> str:
    """What uvicorn's `auto` settings pick: uvloop and httptools when installed (the `server` extra)."""
    import importlib.util

    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return f"event loop {loop}, HTTP parser {http}"


def report(load: list[dict], faults: list[dict], real: list[dict], real_model: str | None,
           level_seconds: float, wrk_seconds: float, load_average: float | None = None) -> list[str]:
    from provenance import header

    lines = header("Service under load and faults (`rebuttal serve`)",
                   split="synthetic posts (one fixed sentence with a counter); no dataset",
                   model=("fake fast pipeline (no model) for load and fault runs"
                          + (f"; {real_model} (llama.cpp, 1 thread) for the real-model row" if real_model else "")),
                   memory="none (the fake pipeline has no memory or encoder)"
                   + ("; the real-model /v1/analyze row uses FIRE's shipped memory with all-MiniLM-L6-v2"
                      if any(row["path"] == "/v1/analyze" for row in real) else ""))
    counts = sorted({row["workers"] for row in load})
    lines.insert(-2, f"- server processes: load levels with {_processes(counts) if counts else 'none'} "
                     f"(`--workers`); fault and real-model runs with 1 uvicorn process; {_http_stack()}")
    busy = f"; the machine's 1-minute load average before the load runs was {load_average:.1f}" \
        if load_average is not None else ""
    lines += [
        "Setup: `nice -n 19`, 127.0.0.1; one uvicorn process, or uvicorn's process manager with N worker "
        "processes (as `rebuttal serve --workers N`) where the `workers` column says so; SQLite in WAL mode in "
        "a temporary folder (or the PostgreSQL server given, on the same machine, where the `database` column "
        "says so), rate limits in the database (every request takes a token; limits set high enough "
        "never to refuse), the request log on. The load client runs on the same 2 shared cores, so client "
        "latency includes client-side queuing, and the client's CPU is CPU the server does not get: `threads` is Python "
        "(httpx, one thread per client, keep-alive, up to the request count or "
        f"{level_seconds:g} s per level), about as costly "
        "per request as the server; `wrk` is the C load generator (one thread, one keep-alive connection per "
        f"client, {wrk_seconds:g} s per level){busy}.", "",
        "`server p50/p95` is the server's own time per request from its request log: from the request reaching "
        "the app to the response head (authentication, role check, rate-limit token, pipeline, result stored), "
        "including any wait for the event loop, the threadpool, the database writer and the CPU while the "
        "process serves other requests. `server CPU/req` is the CPU time of the server process(es) during the "
        "level divided by its requests: the work per request, without the waiting (on PostgreSQL rows, without "
        "the database server's own CPU).", "",
        "## Load: one post per request", "",
        "| load client | database | workers | clients | requests | req/s | p50 ms | p95 ms | p99 ms | server p50 ms "
        "| server p95 ms | server CPU/req ms | errors | status codes | accepted with exactly one stored result |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in load + real:
        lines.append(_load_row(row, real=row in real))
    lines += _reading(load)
    lines += _fault_lines(faults)
    lines += ["", "Targets (issue 15): no 5xx and no lost result at 32 clients; server p95 overhead < "
              f"{TARGET_MS:g} ms with the fake pipeline; 0 lost and 0 duplicated items in the fault run."]
    return lines


def _load_row(row: dict, real: bool) -> str:
    ok = row["accepted_n"] - row["missing"] - row["duplicated"]
    codes = ", ".join(f"{code}: {n}" for code, n in sorted(row["statuses"].items()))
    label = f"{row['clients']}" + (f" (real model, {row['path']})" if real else "")
    cpu = f"{row['cpu_ms']:.2f}" if row.get("cpu_ms") is not None else "n/a"
    return (f"| {row['client']} | {row['db']} | {row['workers']} | {label} | {row['sent']} | {row['rps']:.0f} | {row['p50']:.1f} "
            f"| {row['p95']:.1f} | {row['p99']:.1f} | {percentile(row['server_ms'], 50):.1f} | {percentile(row['server_ms'], 95):.1f} "
            f"| {cpu} | {row['errors']} ({row['errors'] / max(1, row['sent']):.1%}) | {codes} "
            f"| {ok}/{row['accepted_n']} (missing {row['missing']}, duplicated {row['duplicated']}) |")


def _clients(n: int) -> str:
    return f"{n} client{'s' if n != 1 else ''}"


def _reading(load: list[dict]) -> list[str]:
    """Per process count: the throughput bound at the top level, and where the target holds."""
    lines = []
    for client, db, workers in sorted({(row["client"], row["db"], row["workers"]) for row in load}):
        rows = [row for row in load if (row["client"], row["db"], row["workers"]) == (client, db, workers)]
        top = rows[-1]
        met = [_clients(r["clients"]) for r in rows if percentile(r["server_ms"], 95) < TARGET_MS]
        missed = [f"{_clients(r['clients'])} ({percentile(r['server_ms'], 95):.0f} ms)" for r in rows
                  if not percentile(r["server_ms"], 95) < TARGET_MS]
        cpu = f", its CPU work {top['cpu_ms']:.2f} ms per request" if top.get("cpu_ms") is not None else ""
        lines.append(
            f"- {client} client, {db}, {workers} worker{'s' if workers > 1 else ''}: at {top['clients']} clients, {top['rps']:.0f} req/s. "
            f"A closed loop of {top['clients']} clients at that rate takes clients / throughput = "
            f"{top['clients'] / top['rps'] * 1000:.0f} ms per request on average (Little's law); the server's median "
            f"time is {percentile(top['server_ms'], 50):.0f} ms{cpu}; the rest is waiting: for the CPU (shared with "
            f"the client and other jobs), the event loop, the threadpool and the database writer. Server p95 < "
            f"{TARGET_MS:g} ms: met at {', '.join(met) or 'no level'}"
            + (f"; not met at {', '.join(missed)}." if missed else "."))
    return ["", "Reading:", "", *lines] if lines else []


def _fault_lines(faults: list[dict]) -> list[str]:
    if not faults:
        return []
    lines = ["", "## Fault: SIGKILL during a 500-item batch, then restart on the same database", "",
             "| database | items | done when killed | job after restart | restarts | item errors | lost "
             "| duplicated | kill → job done (s) |", "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for row in faults:
        lines.append(f"| {row['db']} | {row['items']} | {row['done_at_kill']} | {row['status']} | {row['restarts']} "
                     f"| {row['errors']} | {row['lost']} | {row['duplicated']} | {row['recovered_s']:.1f} |")
    lease = faults[0]["lease_s"]
    lines += ["", f"The pipeline takes {faults[0]['pipeline_ms']:g} ms per item. The item running when the "
              f"process died resumes once its lease ({lease:g} s here, `REBUTTAL_JOB_LEASE_S`, default 30 s) "
              "has passed; restart time (process start, migrations check) is included. `restarts` is 0 when "
              "no item happened to be in flight at the moment of the kill."]
    return lines
