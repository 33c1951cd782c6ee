"""The shared plumbing: configuration, ModelSettings, batched structured calls, trace records,
typed search outcomes."""

from __future__ import annotations

import pytest
from fakes import ScriptedChatModel
from pydantic import BaseModel

from rebuttal import config
from rebuttal.evidence.base import FallbackSearcher, SearchError, search_evidence
from rebuttal.llm import ModelSettings, StructuredOutputError, generate_objects
from rebuttal.types import EvidenceItem, TraceStep, Usage


class Answer(BaseModel):
    n: int


def test_config_reads_the_environment_when_asked(monkeypatch, tmp_path):
    monkeypatch.delenv("REBUTTAL_HOME", raising=False)
    monkeypatch.setenv("REBUTTAL_DATA_DIR", str(tmp_path / "old"))
    assert config.home_dir() == tmp_path / "old"  # the older name still works
    monkeypatch.setenv("REBUTTAL_HOME", str(tmp_path / "home"))
    assert config.home_dir() == tmp_path / "home"
    assert config.db_url() == f"sqlite:///{tmp_path / 'home' / 'rebuttal.db'}"
    monkeypatch.setenv("REBUTTAL_THREADS", "3")
    assert config.threads() == 3 and ModelSettings().threads == 3
    monkeypatch.setenv("REBUTTAL_THREADS", "many")
    with pytest.raises(ValueError, match="REBUTTAL_THREADS"):
        config.threads()


def test_model_settings_are_one_frozen_value(monkeypatch):
    monkeypatch.setenv("REBUTTAL_BACKEND", "openai")
    monkeypatch.setenv("REBUTTAL_MODEL", "served")
    monkeypatch.delenv("REBUTTAL_THREADS", raising=False)
    settings = ModelSettings.of(model="other", threads=None)
    assert (settings.backend, settings.model, settings.threads) == ("openai", "other", None)
    assert settings.with_(threads=2).threads == 2 and settings.threads is None
    assert hash(settings) == hash(ModelSettings.of(model="other"))  # usable as a cache key
    with pytest.raises(ValueError, match="unknown backend"):
        ModelSettings(backend="gpu")
    with pytest.raises(ValueError, match="unknown model setting"):
        settings.with_(temperature=0.3)


def test_generate_objects_batches_and_reasks_only_the_invalid():
    model = ScriptedChatModel([{"n": 1}, "no json", {"n": "x"}, {"n": 2}, "still bad"])
    outcomes = generate_objects(model, [[{"role": "user", "content": q}] for q in "abc"], Answer)
    assert outcomes[0].value == Answer(n=1) and outcomes[0].attempts == 1
    assert outcomes[1].value == Answer(n=2) and outcomes[1].attempts == 2
    assert isinstance(outcomes[2], StructuredOutputError) and outcomes[2].attempts == 2
    assert outcomes[2].raw == "still bad"
    reask = model.calls[3]["messages"]  # b's re-ask carries its own error
    assert reask[0]["content"] == "b" and reask[1]["content"] == "no json" and "not valid" in reask[2]["content"]
    assert len(model.calls) == 5


def test_trace_step_record_adds_the_cost_of_each_call():
    model = ScriptedChatModel(["bad", {"n": 1}, {"n": 2}])
    first, second = (generate_objects(model, [[{"role": "user", "content": "q"}]], Answer)[0] for _ in range(2))
    step = TraceStep(stage="s", attempts=0).record(first).record(second)
    assert step.attempts == 3
    assert step.usage == first.usage + second.usage and step.usage.completion_tokens > 0
    assert step.latency_s == pytest.approx(first.latency_s + second.latency_s)
    failed = StructuredOutputError("x", raw="", attempts=2, usage=Usage(prompt_tokens=5), latency_s=1.5)
    step = TraceStep(stage="t", attempts=0).record(failed)
    assert (step.attempts, step.usage.prompt_tokens, step.latency_s) == (2, 5, 1.5)


class _Fixed:
    def __init__(self, name, items=None, error=None):
        self.name, self.items, self.error = name, items or [], error

    def search(self, query, k=3):
        if self.error:
            raise SearchError(self.error)
        return self.items[:k]


def test_search_outcome_says_when_it_degraded():
    item = EvidenceItem(id="e1", text="t", source="s")
    direct = search_evidence(_Fixed("local", [item]), "q")
    assert (direct.items, direct.degraded, direct.source) == ([item], False, "local")
    good = search_evidence(FallbackSearcher(_Fixed("web", [item]), _Fixed("local")), "q")
    assert (good.degraded, good.source) == (False, "web")
    failed = search_evidence(FallbackSearcher(_Fixed("web", error="timeout"), _Fixed("local", [item])), "q")
    assert (failed.items, failed.degraded, failed.source) == ([item], True, "local")
    assert failed.notes == ["web search failed (timeout); used local evidence instead"]
    empty = search_evidence(FallbackSearcher(_Fixed("web"), _Fixed("local", [item])), "q")
    assert empty.degraded and "found nothing" in empty.notes[0]
