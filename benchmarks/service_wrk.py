"""The load client in C: wrk (Debian package `wrk`), driven by a Lua script that gives every
request its own id and counts status codes. Python client threads cost about as much CPU per
request as the server itself, and on 2 cores that CPU is the server's; wrk measures the server
without starving it."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

SCRIPT = """
local key, tag, text, path = %s, %s, %s, %s
local threads = {}
local counter = 0
statuses = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function request()
  counter = counter + 1
  local id = tag .. "-" .. tid .. "-" .. counter
  local body = '{"text": "' .. text .. ' #' .. counter .. '", "id": "' .. id .. '"}'
  return wrk.format("POST", path, {["Content-Type"] = "application/json", ["X-API-Key"] = key}, body)
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local codes = {}
  for _, thread in ipairs(threads) do
    for code, n in pairs(thread:get("statuses")) do codes[tostring(code)] = (codes[tostring(code)] or 0) + n end
  end
  local parts = {}
  for code, n in pairs(codes) do table.insert(parts, string.format('"%%s": %%d', code, n)) end
  local e = summary.errors
  io.write(string.format('RESULT {"requests": %%d, "duration_us": %%d, "p50": %%d, "p95": %%d, "p99": %%d, ' ..
    '"socket_errors": %%d, "statuses": {%%s}}\\n', summary.requests, summary.duration, latency:percentile(50),
    latency:percentile(95), latency:percentile(99), e.connect + e.read + e.write + e.timeout,
    table.concat(parts, ", ")))
end
"""


def available() -> bool:
    return shutil.which("wrk") is not None


def wrk_level(url: str, key: str, clients: int, seconds: float, tag: str, text: str, path: str) -> dict:
    """One load level: `clients` keep-alive connections on one wrk thread for `seconds`. Request ids
    are `<tag>-<thread>-<n>`, so the stored results can be counted by the tag."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(SCRIPT % tuple(json.dumps(v) for v in (key, tag, text, path)))
    try:
        done = subprocess.run(["wrk", "-t1", f"-c{clients}", f"-d{seconds:g}s", "--timeout", "30s", "-s", handle.name,
                               url], capture_output=True, text=True, timeout=seconds + 60, check=True)
    finally:
        Path(handle.name).unlink(missing_ok=True)
    line = next((l for l in done.stdout.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result: {done.stdout[-500:]} {done.stderr[-500:]}")
    out = json.loads(line[len("RESULT "):])
    statuses = {int(code): n for code, n in out["statuses"].items()}
    if out["socket_errors"]:
        statuses[0] = out["socket_errors"]
    sent, wall = out["requests"], out["duration_us"] / 1e6
    return {"clients": clients, "sent": sent, "wall_s": wall, "rps": sent / wall if wall else 0.0,
            "p50": out["p50"] / 1000, "p95": out["p95"] / 1000, "p99": out["p99"] / 1000, "statuses": statuses,
            "errors": sent - statuses.get(200, 0), "accepted_n": statuses.get(200, 0), "tag": tag}
