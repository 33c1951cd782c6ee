import importlib
import sys

import pytest
from fakes import FakeOpenAIServer, ScriptedChatModel, chat_body
from pydantic import BaseModel, Field

from rebuttal.llm import LLMError, StructuredOutputError, extract_json, generate_object
from rebuttal.llm.openai_compat import OpenAICompatModel


class Verdict(BaseModel):
    hateful: bool
    score: float = Field(ge=0, le=1)


def test_extract_json_from_prose_and_fences():
    assert extract_json('Sure! ```json\n{"a": [1, 2]}\n``` done') == {"a": [1, 2]}
    assert extract_json('noise { broken {"b": 1}') == {"b": 1}
    with pytest.raises(ValueError):
        extract_json("no json here")


def test_generate_parses_schema_and_reports_usage():
    model = ScriptedChatModel([{"hateful": True, "score": 0.9}])
    completion = model.generate([{"role": "user", "content": "x" * 40}], schema=Verdict)
    assert completion.parsed == Verdict(hateful=True, score=0.9)
    assert completion.usage.prompt_tokens == 10
    assert model.calls[0]["schema"]["title"] == "Verdict"


def test_thinking_blocks_are_stripped():
    model = ScriptedChatModel(['<think>hmm</think>{"hateful": false, "score": 0.1}'])
    assert model.generate([{"role": "user", "content": "x"}], schema=Verdict).parsed.hateful is False


def test_reask_with_validation_error_then_success():
    model = ScriptedChatModel([{"hateful": True, "score": 7}, {"hateful": True, "score": 0.7}])
    result = generate_object(model, [{"role": "user", "content": "judge"}], Verdict)
    assert result.value.score == 0.7
    assert result.attempts == 2
    reask = model.calls[1]["messages"]
    assert reask[-2]["role"] == "assistant" and '"score": 7' in reask[-2]["content"]
    assert "score" in reask[-1]["content"] and "less than or equal to 1" in reask[-1]["content"]


def test_typed_failure_after_one_reask():
    model = ScriptedChatModel(["garbage", "still garbage", "never asked"])
    with pytest.raises(StructuredOutputError) as info:
        generate_object(model, [{"role": "user", "content": "judge"}], Verdict)
    assert info.value.attempts == 2
    assert info.value.raw == "still garbage"
    assert info.value.usage.completion_tokens > 0
    assert len(model.calls) == 2


def test_openai_client_passes_schema_and_reads_usage():
    body = chat_body('{"hateful": false, "score": 0.2}', prompt_tokens=33, completion_tokens=7)
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 20}
    with FakeOpenAIServer([(200, body, 0)]) as server:
        model = OpenAICompatModel("Qwen/Qwen3-1.7B", server.url, max_retries=0)
        completion = model.generate([{"role": "user", "content": "hi"}], schema=Verdict, seed=3)
    assert completion.parsed == Verdict(hateful=False, score=0.2)
    assert (completion.usage.prompt_tokens, completion.usage.cached_prompt_tokens) == (33, 20)
    sent = server.requests[0]
    assert sent["model"] == "Qwen/Qwen3-1.7B" and sent["seed"] == 3 and sent["temperature"] == 0.0
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["required"] == ["hateful", "score"]


def test_openai_client_retries_transient_errors():
    ok = chat_body("fine")
    with FakeOpenAIServer([(503, {"error": "busy"}, 0), (429, {"error": "slow"}, 0), (200, ok, 0)]) as server:
        model = OpenAICompatModel("m", server.url, max_retries=2, backoff_s=0.01)
        assert model.generate([{"role": "user", "content": "hi"}]).text == "fine"
    assert len(server.requests) == 3


def test_openai_client_gives_up_after_bounded_retries():
    with FakeOpenAIServer([(500, {"error": "down"}, 0)]) as server:
        model = OpenAICompatModel("m", server.url, max_retries=1, backoff_s=0.01)
        with pytest.raises(LLMError, match="after 2 attempts"):
            model.generate([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 2


def test_openai_client_times_out():
    with FakeOpenAIServer([(200, chat_body("late"), 1.0)]) as server:
        model = OpenAICompatModel("m", server.url, timeout_s=0.2, max_retries=1, backoff_s=0.01)
        with pytest.raises(LLMError, match="timed out"):
            model.generate([{"role": "user", "content": "hi"}])


def test_openai_client_client_error_is_not_retried():
    with FakeOpenAIServer([(400, {"error": "bad model"}, 0)]) as server:
        model = OpenAICompatModel("m", server.url, max_retries=3, backoff_s=0.01)
        with pytest.raises(LLMError, match="HTTP 400"):
            model.generate([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1


def test_openai_batch_runs_concurrently_and_keeps_order():
    with FakeOpenAIServer([(200, chat_body("same"), 0.3)]) as server:
        model = OpenAICompatModel("m", server.url, max_concurrency=4)
        import time

        started = time.perf_counter()
        outs = model.generate_batch([[{"role": "user", "content": str(i)}] for i in range(4)])
        elapsed = time.perf_counter() - started
    assert [o.text for o in outs] == ["same"] * 4
    assert sorted(r["messages"][0]["content"] for r in server.requests) == ["0", "1", "2", "3"]
    assert elapsed < 1.0  # four 0.3 s requests in parallel, not 1.2 s in sequence


def test_missing_backend_has_install_hint(monkeypatch):
    from rebuttal.llm.base import MissingBackend, require

    monkeypatch.setitem(sys.modules, "definitely_not_here", None)
    with pytest.raises(MissingBackend, match=r"pip install 'rebuttal\[llama\]'"):
        require("definitely_not_here", "llama")
    importlib.invalidate_caches()


def test_schema_form_fallback_holds_under_concurrent_calls():
    """A server that refuses the json_schema form (llama-cpp-python's: HTTP 500) and takes the
    json_object form: concurrent first calls all succeed, and the model switches form once."""
    import json
    import threading

    import httpx

    class Answer(BaseModel):
        reply: str

    forms, barrier = [], threading.Barrier(4)

    def handler(request: httpx.Request) -> httpx.Response:
        form = json.loads(request.content)["response_format"]["type"]
        forms.append(form)
        if form == "json_schema":
            barrier.wait(timeout=5)  # every thread's first request is in flight before any refusal
            refusal = "('body', 'response_format', 'type'): Input should be 'text' or 'json_object'"
            return httpx.Response(500, json={"error": {"message": refusal}})
        body = {"choices": [{"message": {"content": '{"reply": "fine"}'}}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
        return httpx.Response(200, json=body)

    model = OpenAICompatModel("m", "http://test/v1", max_retries=3, backoff_s=0.01)
    model._client = httpx.Client(transport=httpx.MockTransport(handler))
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        model.generate([{"role": "user", "content": "hi"}], schema=Answer).parsed)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.reply for r in results] == ["fine"] * 4
    assert forms.count("json_schema") == 4 and model.schema_form == "json_object"  # a refusal is not retried
    assert model.generate([{"role": "user", "content": "again"}], schema=Answer).parsed.reply == "fine"
    assert forms[-1] == "json_object" and forms.count("json_schema") == 4  # no more refused calls
