"""`rebuttal run --engine ray` on a local Ray instance: the rows, ids, error rows and resume of
the local runner. Skipped when the `ray` extra is not installed."""

import json
import os
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="needs the `ray` extra: pip install 'rebuttal[ray]'")
pytest.importorskip("ray.data", reason="needs the `ray` extra: pip install 'rebuttal[ray]'")

from fakes import ScriptedChatModel  # noqa: E402

from rebuttal.data.batch import BatchItem, items_from_rows, read_rows, run_batch  # noqa: E402
from rebuttal.data.ray_runner import RayOptions, init_local, run_ray  # noqa: E402
from rebuttal.fire.batch import FireWork, run_fire_batch  # noqa: E402
from rebuttal.spar.batch import SparWork  # noqa: E402

TESTS = Path(__file__).parent
OUT = {"target_group": "Immigrants", "hs_type": "stereotype", "analyst_reasoning": "A generalisation.",
       "retrieval_query": "q", "retrieved_evidence": "", "counterspeech": "Many people in this group prove the opposite."}


def answer(messages, schema):
    """The scripted baseline: one fixed answer; a post saying POISON makes the model crash."""
    if "POISON" in messages[1]["content"]:
        raise RuntimeError("poison row")
    return OUT


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance for the module; its workers import tests/ (fakes, this module)."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), old) if p)
    init_local(ray, num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield RayOptions(actors=2, batch_size=4)
    ray.shutdown()
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old


@pytest.fixture
def posts(tmp_path):
    rows = [{"id": f"p{i:02d}", "text": f"they always fail {i}"} for i in range(47)]
    rows[10]["text"] = "POISON they always fail"
    rows[20]["text"] = ""  # an input error row
    lines = [json.dumps(r) for r in rows] + ["{broken", json.dumps({"text": "no id here, they always fail"}),
                                             json.dumps({"id": "no-text"})]
    path = tmp_path / "posts.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def comparable(row):
    """A row without the timings that differ between two runs."""
    if isinstance(row, dict):
        return {k: comparable(v) for k, v in row.items() if k not in ("latency_s", "created_at")}
    if isinstance(row, list):
        return [comparable(v) for v in row]
    return row


def read_out(path):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicated ids"
    return {r["id"]: comparable(r) for r in rows}


def work():
    return FireWork("zero-shot", model=ScriptedChatModel(handler=answer))


def test_ray_rows_equal_local_rows_with_error_rows(local_ray, posts, tmp_path):
    local, remote = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    run_fire_batch(posts, local, model=ScriptedChatModel(handler=answer), system="zero-shot", progress=False)
    summary = run_fire_batch(posts, remote, model=ScriptedChatModel(handler=answer), system="zero-shot",
                             progress=False, engine="ray", ray=local_ray)
    assert (summary.total, summary.done, summary.errors, summary.skipped) == (50, 46, 4, 0)
    assert summary.rows_per_s > 0 and "rows/s" in str(summary)
    local_rows, ray_rows = read_out(local), read_out(remote)
    assert ray_rows == local_rows and len(ray_rows) == 50
    assert ray_rows["p10"]["status"] == "error" and "RuntimeError: poison row" in ray_rows["p10"]["message"]
    assert ray_rows["p20"]["status"] == "error"  # empty text: the baseline's own error result
    assert ray_rows["row-48"]["status"] == "error" and "invalid JSON" in ray_rows["row-48"]["message"]
    assert ray_rows["row-49"]["status"] == "ok"  # fallback id by position, as locally
    assert ray_rows["no-text"]["status"] == "error"
    assert ray_rows["p11"]["reply"]["text"].startswith("Many")


def test_ray_resumes_after_an_interrupted_run(local_ray, posts, tmp_path):
    out = tmp_path / "out.jsonl"
    run_ray(items_from_rows(read_rows(posts)), work(), out, options=local_ray, progress=False)
    full = read_out(out)
    lines = out.read_text().splitlines()
    # killed mid-write: 20 complete rows and half of the 21st
    out.write_text("\n".join(lines[:20]) + "\n" + lines[20][: len(lines[20]) // 2])
    summary = run_ray(items_from_rows(read_rows(posts)), work(), out, options=local_ray, progress=False)
    assert (summary.skipped, summary.done + summary.errors) == (20, 30)
    assert read_out(out) == full  # nothing lost, nothing twice
    again = run_ray(items_from_rows(read_rows(posts)), work(), out, options=local_ray, progress=False)
    assert (again.skipped, again.done, again.errors) == (50, 0, 0)
    retried = run_ray(items_from_rows(read_rows(posts)), work(), out, options=local_ray, progress=False,
                      retry_errors=True)
    assert (retried.skipped, retried.errors) == (46, 4)
    assert read_out(out) == full


def test_actor_threads_and_parquet_input(local_ray, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    path = tmp_path / "posts.parquet"
    pq.write_table(pa.table({"id": [f"q{i}" for i in range(12)], "text": [f"they always fail {i}" for i in range(12)]}),
                   path)
    items = list(items_from_rows(read_rows(path)))
    assert [i.id for i in items[:2]] == ["q0", "q1"] and isinstance(items[0], BatchItem)
    local, remote = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    run_batch(items, work()(), local, progress=False)
    summary = run_ray(items, work(), remote, options=local_ray, concurrency=3, progress=False)
    assert (summary.done, summary.errors) == (12, 0)
    assert read_out(remote) == read_out(local)


def test_cli_ray_engine_over_an_openai_compatible_server(local_ray, posts, tmp_path):
    """`rebuttal run --engine ray --backend openai`: every actor sends its rows to the server."""
    from fakes import FakeOpenAIServer, chat_body
    from typer.testing import CliRunner

    from rebuttal.cli import app

    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer([(200, chat_body(json.dumps(OUT)), 0.0)]) as server:
        result = CliRunner().invoke(app, [
            "run", "--input", str(posts), "--output", str(out), "--system", "zero-shot",
            "--backend", "openai", "--model", "served", "--base-url", server.url,
            "--engine", "ray", "--actors", "2", "--cpus-per-actor", "0.5", "--batch-size", "8", "--concurrency", "2",
        ])
    assert result.exit_code == 0, result.output
    assert "rows/s" in result.output
    rows = read_out(out)
    assert len(rows) == 50 and rows["p10"]["status"] == "ok" and rows["p11"]["reply"]["text"].startswith("Many")
    assert len(server.requests) == 47 and server.requests[0]["model"] == "served"


def test_an_actor_pool_larger_than_a_local_instance_is_refused():
    from rebuttal.data.ray_runner import check_fits

    check_fits({"CPU": 2.0}, RayOptions(actors=4, cpus_per_actor=0.5))
    with pytest.raises(ValueError, match="4 actors x 1 CPU need 4 CPUs"):
        check_fits({"CPU": 2.0}, RayOptions(actors=4, cpus_per_actor=1))
    with pytest.raises(ValueError, match="GPU"):
        check_fits({"CPU": 2.0}, RayOptions(actors=1, gpus_per_actor=1))


class ScriptedSparWork(SparWork):
    """SparWork whose parser is the scripted one, built in each actor (a SparParser holds a
    lock and does not pickle, so it is built where it runs, as `rebuttal run` does)."""

    def build_parser(self):
        from test_spar_pipeline import parser_with, spar_handler

        return parser_with(spar_handler())[0]


def test_spar_on_ray_equals_local_with_traces(local_ray, tmp_path):
    from test_spar_pipeline import POST, parser_with, spar_handler

    from rebuttal.data.engines import run_rows
    from rebuttal.spar.batch import run_spar_batch

    gold = tmp_path / "tbo.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in [
        *({"id": f"t{i}", "text": POST} for i in range(6)), {"id": "empty", "text": ""}]))
    local, remote, traces = tmp_path / "local.jsonl", tmp_path / "ray.jsonl", tmp_path / "traces.jsonl"
    run_spar_batch(gold, local, parser=parser_with(spar_handler())[0], progress=False)
    work = ScriptedSparWork(traces=traces, source=gold.name)
    summary = run_rows(items_from_rows(read_rows(gold)), work, remote, engine="ray", ray=local_ray, progress=False)
    assert (summary.done, summary.errors) == (6, 1)
    assert read_out(remote) == read_out(local)
    assert len(traces.read_text().splitlines()) == 12  # two teacher rows per post, written by the actors
