"""FIRE over a served model: throughput against in-flight requests, local runner vs Ray local
mode. Writes benchmarks/results/scale_server.md (whole).

    PYTHONPATH=src .venv/bin/python benchmarks/scale_server.py --posts 24

Starts llama.cpp's OpenAI-compatible server (`llama-cpp-python[server]`) on loopback with the
tiny embedded model (smollm2-135m; its replies are poor, only the timing matters here), then
runs FIRE with `--backend openai` on the same posts at 1, 2, 4 and 8 requests in flight: the
local runner with that many threads, and Ray local mode (one actor per core, threads inside each
actor to the same total). Every run starts from an empty output file; the first run warms up.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))
from provenance import header  # noqa: E402

OUT = ROOT / "runs" / "bench" / "scale-server"
RESULT = ROOT / "benchmarks" / "results" / "scale_server.md"
DEV = ROOT.parent / "shared" / "data" / "factualcs-silver" / "dev.jsonl"
FALLBACK_POSTS = ["Immigrants are always lazy and never work.", "Women are too emotional to lead.",
                  "Muslims secretly plan to take over Europe.", "Those people are vermin."]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(threads: int) -> tuple[subprocess.Popen, str]:
    from rebuttal.llm.registry import model_path

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path("smollm2-135m")),
         "--model_alias", "smollm2", "--n_threads", str(threads), "--n_threads_batch", str(threads),
         "--n_ctx", "4096", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("llama.cpp server did not start within 90 s")


def posts_file(n: int) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    if DEV.exists():
        rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()][:n]
        rows = [{"id": r["id"], "text": r["hate_speech"]} for r in rows]
    else:
        rows = [{"id": f"p{i}", "text": FALLBACK_POSTS[i % len(FALLBACK_POSTS)]} for i in range(n)]
    path = OUT / "posts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def first_post(source: Path) -> Path:
    path = OUT / "one-post.jsonl"
    path.write_text(source.read_text().splitlines()[0] + "\n")
    return path


def timed_run(source: Path, settings, engine: str, in_flight: int, cores: int, name: str = "") -> dict:
    from rebuttal.data.ray_runner import RayOptions
    from rebuttal.fire.batch import run_fire_batch

    out = OUT / f"{engine}-{in_flight}{name}.jsonl"
    out.unlink(missing_ok=True)
    ray = None
    concurrency = in_flight
    if engine == "ray":
        actors = min(cores, in_flight)
        ray = RayOptions(actors=actors, cpus_per_actor=1, batch_size=4, local_cpus=cores)
        concurrency = max(1, in_flight // actors)
    started = time.perf_counter()
    summary = run_fire_batch(source, out, model_settings=settings, concurrency=concurrency, progress=False,
                             engine=engine, ray=ray)
    seconds = time.perf_counter() - started
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {"engine": engine, "in_flight": in_flight, "posts": len(rows), "errors": summary.errors,
            "seconds": seconds, "posts_per_s": len(rows) / seconds}


def markdown(rows: list[dict], args) -> list[str]:
    lines = header("FIRE over a served model: throughput vs requests in flight",
                   split=f"the first {args.posts} silver dev posts (timing only; replies are not scored)",
                   model=f"smollm2-135m (tiny embedded GGUF) behind llama.cpp's OpenAI-compatible server, "
                         f"{args.server_threads} thread(s); FIRE with `--backend openai`",
                   memory="shipped defaults (exemplar bank + SupCon head, category model, gate, evidence store)")
    for r in rows:
        r["steady"] = r["posts"] / max(1e-9, r["seconds"] - r.get("startup_s", 0.0))
    lines += ["| engine | requests in flight | posts | errors | seconds | posts/s | Ray start-up s | posts/s without start-up |",
              "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['engine']} | {r['in_flight']} | {r['posts']} | {r['errors']} | {r['seconds']:.1f} | "
              f"{r['posts_per_s']:.2f} | {r.get('startup_s', 0.0):.1f} | {r['steady']:.2f} |" for r in rows]
    best = {e: max((r for r in rows if r["engine"] == e), key=lambda r: r["steady"]) for e in ("local", "ray")}
    overhead = best["local"]["steady"] / best["ray"]["steady"] - 1
    lines += ["", f"Saturation: local runner {best['local']['steady']:.2f} posts/s (at {best['local']['in_flight']} "
              f"in flight), Ray {best['ray']['steady']:.2f} posts/s without start-up (at {best['ray']['in_flight']}); "
              "Ray start-up is measured as a one-post run with the same actors minus one post's local time; per-post "
              f"time Ray adds at saturation: {overhead:+.1%} (target < 5%).", "",
              "llama.cpp's server decodes one request at a time, so more requests in flight only overlap FIRE's "
              "own work (MiniLM, gate, checks, evidence search) and HTTP with decoding; a vLLM server batches "
              "requests and keeps scaling (docs/scale.md). Ray runs one actor per core, each building FIRE once; "
              "its start-up (ray.init, actor start) is inside `seconds`, and taken out in the last column.", ""]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=24)
    parser.add_argument("--server-threads", type=int, default=2)
    parser.add_argument("--cores", type=int, default=2, help="CPUs the Ray local instance may use")
    args = parser.parse_args()
    from rebuttal.llm import ModelSettings

    process, url = start_server(args.server_threads)
    try:
        settings = ModelSettings.of(backend="openai", model="smollm2", base_url=url)
        source = posts_file(args.posts)
        timed_run(source, settings, "local", 1, args.cores)  # warm-up: model caches, imports
        rows = []
        for engine in ("local", "ray"):
            for in_flight in (1, 2, 4, 8):
                row = timed_run(source, settings, engine, in_flight, args.cores)
                if engine == "ray":  # start-up (ray.init, actors building FIRE) is a fixed cost, not per post
                    one = timed_run(first_post(source), settings, engine, in_flight, args.cores, "-startup")
                    local_one = next(r for r in rows if r["in_flight"] == 1)["seconds"] / row["posts"]
                    row["startup_s"] = max(0.0, one["seconds"] - local_one)
                rows.append(row)
                print(rows[-1], flush=True)
        RESULT.write_text("\n".join(markdown(rows, args)) + "\n", encoding="utf-8")
        print(RESULT.read_text())
    finally:
        process.terminate()
        process.wait(timeout=15)


if __name__ == "__main__":
    main()
