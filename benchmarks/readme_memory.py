"""Peak memory and wall time of the README's first command, and of the lighter set-ups the README
offers a small machine -> benchmarks/results/memory_first_command.md (written whole).

Each configuration runs once, in a fresh process, under GNU time (`/usr/bin/time -v`), which
reports the process's peak resident set size ("Maximum resident set size"):

1. the README's first command as it ships: `rebuttal respond "<the example post>"` (the embedded
   qwen2.5-1.5b, llama.cpp on the CPU);
2. the same with the smallest registered model as the chat model (`--model smollm2-135m`);
3. the same with `--backend openai` against an OpenAI-compatible server elsewhere: here a stub on
   127.0.0.1 that answers every call at once (schema-shaped JSON or one fixed sentence), so only
   the rebuttal process's own memory is measured, not the server's;
4. `rebuttal memory query` on the same post: Python, torch, MiniLM and the exemplar bank, no chat
   model and no hate gate (the floor every FIRE process pays).

The gate's reader (the first 14 layers of qwen2.5-1.5b, cut into the cache on first use, ~1 min)
is loaded in 1-3; run the first command once before measuring if the cache is new (`--warm`).

    PYTHONPATH=src .venv/bin/python benchmarks/readme_memory.py [--warm] [--only default]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from provenance import header  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "memory_first_command.md"
POST = "Immigrants are flooding in and most of them end up as criminals living off benefits."
STUB_SENTENCE = "Most immigrants work and pay taxes, and studies of crime rates do not show them offending more."
STUB = "{stub}"  # replaced by the stub server's URL


def configurations() -> dict[str, tuple[str, list[str]]]:
    """name -> (what it is, rebuttal arguments)."""
    return {
        "default": ("the README's first command (embedded qwen2.5-1.5b)", ["respond", POST]),
        "smollm2": ("`--model smollm2-135m` (the smallest registered chat model)",
                    ["respond", "--model", "smollm2-135m", POST]),
        "openai": ("`--backend openai` (chat model on a server elsewhere; this process only)",
                   ["respond", "--backend", "openai", "--model", "served", "--base-url", STUB, POST]),
        "floor": ("`rebuttal memory query` (torch, MiniLM, exemplar bank; no chat model, no gate)",
                  ["memory", "query", POST]),
    }


def instance(schema: dict, defs: dict) -> object:
    """A value that fits a (pydantic) JSON schema: the stub server's structured answers."""
    if "$ref" in schema:
        return instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return instance(options[0], defs)
    kind = schema.get("type", "string")
    if kind == "object":
        return {name: instance(sub, defs) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [instance(schema.get("items", {}), defs)] * max(1, schema.get("minItems", 1))
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    return STUB_SENTENCE


class StubServer:
    """An OpenAI-compatible /v1/chat/completions that answers at once (memory of the client only)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                form = body.get("response_format") or {}
                schema = form.get("schema") or (form.get("json_schema") or {}).get("schema")
                content = json.dumps(instance(schema, schema.get("$defs", {}))) if schema else STUB_SENTENCE
                payload = json.dumps({"id": "stub", "object": "chat.completion", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def measure(arguments: list[str]) -> dict[str, str]:
    """Run rebuttal once under GNU time; its resource figures and the result's status line."""
    rebuttal = str(ROOT / ".venv" / "bin" / "rebuttal")
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        done = subprocess.run(["/usr/bin/time", "-v", "-o", report.name, rebuttal, *arguments],
                              cwd=ROOT, capture_output=True, text=True, check=False)
        figures = dict(line.strip().rsplit(": ", 1) for line in report.read().splitlines() if ": " in line)
    lines = [line.strip() for line in done.stdout.splitlines()]
    status = next((line for line in lines if line.startswith(("status:", "predicted:"))), "no status line")
    return {"rss_kb": figures.get("Maximum resident set size (kbytes)", "?"),
            "wall": figures.get("Elapsed (wall clock) time (h:mm:ss or m:ss)", "?"),
            "user": figures.get("User time (seconds)", "?"), "exit": str(done.returncode), "status": status}


def model_files() -> list[str]:
    """The GGUF files in the cache that a `respond` process maps: the chat models and the cut copies."""
    sys.path.insert(0, str(ROOT / "src"))
    from rebuttal import config

    cache = config.cache_dir()
    files = sorted([*(cache / "models").glob("*.gguf"), *(cache / "model-layers").glob("*.gguf")])
    return [f"| `{f.relative_to(cache)}` | {f.stat().st_size / 1e9:.2f} GB |" for f in files]


def gigabytes(kb: str) -> str:
    return f"{int(kb) / 1024 / 1024:.2f} GB" if kb.isdigit() else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", action="store_true", help="run the first command once before measuring")
    parser.add_argument("--only", nargs="*", choices=list(configurations()), help="measure only these")
    args = parser.parse_args()
    if not Path("/usr/bin/time").exists():
        sys.exit("GNU time (/usr/bin/time) is needed: apt-get install time")
    stub = StubServer()
    chosen = {name: (what, [stub.url if a == STUB else a for a in arguments])
              for name, (what, arguments) in configurations().items() if not args.only or name in args.only}
    if args.warm:
        measure(configurations()["default"][1])
    rows = []
    for name, (what, arguments) in chosen.items():
        got = measure(arguments)
        shown = " ".join(".venv/bin/rebuttal" if i == 0 else (f'"{a}"' if " " in a else a)
                         for i, a in enumerate(["rebuttal", *arguments])).replace(stub.url, "http://127.0.0.1:PORT/v1")
        rows.append(f"| {name} | {what} | `{shown}` | {gigabytes(got['rss_kb'])} ({got['rss_kb']} kB) | "
                    f"{got['wall']} | {got['user']} | {got['exit']} | `{got['status']}` |")
        print(rows[-1], flush=True)
    lines = header("Peak memory of the README's first command", split="one post (the README's example), not a data split",
                   model="qwen2.5-1.5b (GGUF, llama.cpp on the CPU) unless the row says otherwise",
                   memory="the shipped exemplar bank, all-MiniLM-L6-v2 encoder")
    lines += [
        ("Each row is one fresh process under `/usr/bin/time -v` (n = 1 per row); `peak RSS` is GNU time's "
         "\"Maximum resident set size\". The model files are memory-mapped, so the pages of them the process "
         "touched count in its RSS."), "",
        "| run | what | command | peak RSS | wall time (m:ss) | user CPU s | exit code | result |",
        "|---|---|---|---|---|---|---|---|", *rows, "",
        ("In every `respond` row the hate gate, the category model and the draft score read the first 14 layers "
         "of qwen2.5-1.5b (the cut copy in `model-layers/` below) whatever the chat model is; "
         "`openai` talks to a stub that answers at once, so its wall time is not a model's."), "",
        "Model files in the cache folder (sizes on disk):", "", "| file | size |", "|---|---|", *model_files(),
    ]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
