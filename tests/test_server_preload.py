"""A loaded pipeline is frozen out of the garbage collector's reach (issue 50): its ~0.5 M objects
made every full collection stall the requests in flight (benchmarks/results/service_preload.md)."""

import gc
import threading

from rebuttal.server import services


def test_freezing_moves_what_exists_out_of_the_collectors_reach():
    before = gc.get_freeze_count()
    try:
        services.freeze_long_lived()
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()  # the test process keeps collecting as usual


def test_the_preload_freezes_after_the_warm_up(monkeypatch):
    calls = []
    monkeypatch.setattr(services, "freeze_long_lived", lambda: calls.append("freeze"))

    class Pipeline:
        def warm_up(self):
            calls.append("warm_up")

    class Loading:
        def fire(self):
            calls.append("fire")
            return Pipeline()

    services.preload_in_background(Loading())
    for thread in threading.enumerate():
        if thread.name == "rebuttal-preload":
            thread.join(10)
    assert calls == ["fire", "warm_up", "freeze"]


def test_a_pipeline_built_on_first_use_is_frozen_once(monkeypatch):
    import rebuttal.fire

    calls = []
    monkeypatch.setattr(services, "freeze_long_lived", lambda: calls.append("freeze"))
    monkeypatch.setattr(rebuttal.fire, "build_system", lambda *a, **k: "pipeline")
    loaded = services.PipelineServices(model=object())
    assert loaded.fire() == "pipeline" and loaded.fire() == "pipeline"
    assert calls == ["freeze"]
