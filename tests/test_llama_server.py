"""A real OpenAI-compatible server: llama.cpp's (`llama-cpp-python[server]`) on loopback with the
tiny embedded model (smollm2-135m, one thread), hit by `--backend openai` through the local
runner and through Ray. The fake server (tests/fakes.py) stays for timeouts, 5xx and bad JSON."""

import json
import socket
import subprocess
import sys

import pytest

pytest.importorskip("llama_cpp.server", reason="needs the llama-cpp-python[server] extra")

from fakes import wait_until_ok  # noqa: E402
from rebuttal.fire.batch import run_fire_batch  # noqa: E402
from rebuttal.llm import ModelSettings  # noqa: E402

POSTS = [{"id": "s1", "text": "Immigrants are always lazy and never work."},
         {"id": "s2", "text": ""}]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server():
    from rebuttal.llm.registry import ModelRegistryError, model_path

    try:
        gguf = model_path("smollm2-135m")
    except ModelRegistryError as exc:
        pytest.skip(f"tiny model not installed: {exc}")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "smollm2",
         "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "2048",
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        if not wait_until_ok(f"{url}/models", 60, process):
            pytest.fail("llama.cpp server did not start within 60 s")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


# llama-cpp-python's server takes `response_format: {"type": "json_object", "schema": ...}` and
# answers HTTP 500 to the `json_schema` form; OpenAICompatModel then switches forms, so the
# request must never fail on the form.
SCHEMA_FORM = "Input should be 'text' or 'json_object'"


def check_rows(out):
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"s1", "s2"}
    assert rows["s2"]["status"] == "error"  # empty post: an error row, no request
    served = rows["s1"]
    assert SCHEMA_FORM not in (served.get("message") or "")
    # the tiny model's JSON may not fit the schema; the request went through either way
    assert served["status"] in ("ok", "flagged", "error")
    if served["status"] != "error":
        step = served["trace"]["steps"][0]
        assert step["model"] == "smollm2" and step["usage"]["prompt_tokens"] > 50
        assert served["reply"]["text"].strip()
    else:
        assert "invalid model output" in served["message"]
    return rows


def settings(url):
    return ModelSettings.of(backend="openai", model="smollm2", base_url=url, timeout_s=60.0)


def test_plain_completion_over_llama_server(llama_server):
    from rebuttal.llm import load_model

    model = load_model(settings(llama_server))
    completion = model.generate([{"role": "user", "content": "Say hello."}], max_tokens=8)
    assert completion.text and completion.model == "smollm2"
    assert completion.usage.prompt_tokens > 0 and 0 < completion.usage.completion_tokens <= 8


def test_local_runner_over_llama_server(llama_server, tmp_path):
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(p) + "\n" for p in POSTS))
    summary = run_fire_batch(source, out, system="zero-shot", model_settings=settings(llama_server),
                             concurrency=2, progress=False)
    assert summary.done + summary.errors == 2
    check_rows(out)


def test_ray_runner_over_llama_server(llama_server, tmp_path):
    pytest.importorskip("ray.data", reason="needs the `ray` extra: pip install 'rebuttal[ray]'")
    import ray

    from rebuttal.data.ray_runner import RayOptions

    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(p) + "\n" for p in POSTS))
    options = RayOptions(address=None, actors=1, cpus_per_actor=0.5, batch_size=2, local_cpus=1)
    owned = not ray.is_initialized()
    summary = run_fire_batch(source, out, system="zero-shot", model_settings=settings(llama_server),
                             progress=False, engine="ray", ray=options)
    assert summary.done + summary.errors == 2
    assert ray.is_initialized() is not owned  # a run that started Ray shuts it down
    check_rows(out)
