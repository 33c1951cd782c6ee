"""The server on the real FIRE pipeline (scripted model, no memory) and PipelineServices wiring."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")

from fakes import SameVectorEncoder, ScriptedChatModel  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from test_server_api import make_settings  # noqa: E402

from rebuttal.server import PipelineServices, create_app  # noqa: E402
from rebuttal.server.auth import create_key  # noqa: E402
from rebuttal.types import EvidenceItem  # noqa: E402

EVIDENCE = [EvidenceItem(id="ev-0001", text="Crime rates of immigrants are not higher.", source="Stats Office",
                         tier="institutional")]


class ListSearcher:
    name = "list"

    def search(self, query, k=3):
        return EVIDENCE[:k]


def scripted(hateful: bool = True) -> ScriptedChatModel:
    analysis = {"target_group": "Immigrants", "category": "misinformation" if hateful else "none",
                "reasoning": "A false crime statistic.", "search_query": "immigrant crime rates"}
    draft = {"claim": "the claim", "reply": "Official statistics show immigrants are not more likely to offend [1]."}
    return ScriptedChatModel(handler=lambda messages, schema: analysis if schema["title"] == "AnalystOutput" else draft)


def fire_services(model: ScriptedChatModel) -> PipelineServices:
    from rebuttal.fire import FirePipeline, settings_for

    pipeline = FirePipeline(model, None, ListSearcher(), settings_for(["no-memory"], blocks=False),
                           encoder=SameVectorEncoder())
    return PipelineServices(fire=pipeline, model=model)


def test_real_fire_result_flows_into_the_review_queue(tmp_path):
    model = scripted()
    app = create_app(make_settings(tmp_path), services=fire_services(model))
    key = create_key(app.state.rebuttal.db, "alice")
    with TestClient(app, headers={"X-API-Key": key}) as client:
        body = client.post("/v1/respond", json={"text": "Immigrants commit 80 percent of crimes."}).json()
        assert body["result"]["status"] == "ok", body["result"]["message"]
        item = client.get(f"/v1/review/{body['review_id']}").json()
        assert item["category"] == "misinformation" and item["target_group"] == "Immigrants"
        assert item["reply"].startswith("Official statistics")
        assert [e["source"] for e in item["evidence"]] == ["Stats Office"]
        stages = [s["stage"] for s in client.get(f"/v1/results/{body['result_id']}").json()["result"]["trace"]["steps"]]
        assert "evidence" in stages and "generator" in stages and "choice" not in stages  # best of two is off
        health = client.get("/v1/health").json()
        assert health["model"] == "scripted" and health["model_loaded"] is True and health["memory_size"] is None
    assert len(model.calls) == 2


def test_not_hateful_fire_result_is_not_queued(tmp_path):
    app = create_app(make_settings(tmp_path), services=fire_services(scripted(hateful=False)))
    key = create_key(app.state.rebuttal.db, "alice")
    with TestClient(app, headers={"X-API-Key": key}) as client:
        body = client.post("/v1/respond", json={"text": "I like my neighbours."}).json()
    assert body["result"]["status"] == "not_hateful" and body["review_id"] is None


def test_pipeline_services_build_once_and_share_the_model(monkeypatch):
    import rebuttal.fire
    import rebuttal.llm

    loads, builds = [], []
    model = scripted()
    monkeypatch.setattr(rebuttal.llm, "load_model", lambda config: loads.append(config) or model)

    def build_system(system, *, model, web, memory_path):
        builds.append((system, model, web, memory_path))
        return fire_services(model)._fire

    monkeypatch.setattr(rebuttal.fire, "build_system", build_system)
    services = PipelineServices({"backend": "openai", "model": "qwen", "base_url": "http://x/v1", "web": True})
    assert services.health()["model_loaded"] is False
    first = services.respond("Immigrants commit 80 percent of crimes.")
    services.analyze("Immigrants commit 80 percent of crimes.")
    assert first.status == "ok" and first.reply.text.startswith("Official statistics")
    assert len(loads) == 1 and (loads[0].backend, loads[0].model, loads[0].base_url) == ("openai", "qwen", "http://x/v1")
    assert builds == [("fire", model, True, None)]
    assert services.health()["model_loaded"] is True
    with pytest.raises(ValueError, match="unknown pipeline settings"):
        PipelineServices({"temperature": 0.3})


def test_calls_are_serialised_unless_the_backend_handles_concurrency():
    import contextlib

    serial = PipelineServices(model=scripted())
    assert serial._serial() is serial._call_lock  # llama.cpp-like: one call at a time
    http = scripted()
    http.concurrent_calls = True  # what OpenAICompatModel declares
    assert isinstance(PipelineServices(model=http)._serial(), contextlib.nullcontext)


def test_preload_builds_fire_and_warms_its_gate():
    import threading
    from types import SimpleNamespace

    from rebuttal.server.services import preload_in_background

    warmed = threading.Event()
    services = SimpleNamespace(fire=lambda: SimpleNamespace(warm_up=warmed.set))
    preload_in_background(services)
    assert warmed.wait(5)


def test_the_service_parses_with_the_tagger_by_default_and_the_agents_by_name():
    pytest.importorskip("sentence_transformers")
    services = PipelineServices()
    assert type(services.spar()).__name__ == "TaggerParser"
    post = "Immigrants are criminals and should go home"
    assert all(t.target in post and t.argument in post for t in services.parse(post, lang="en").tuples)
    agents = PipelineServices({"spar": {"system": "spar"}}, model=ScriptedChatModel([]))
    assert type(agents.spar()).__name__ == "SparParser"
