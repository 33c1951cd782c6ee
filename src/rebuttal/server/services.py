"""What the server needs from the pipelines, and the production implementation.

Tests pass their own object with the same four methods; production loads one chat model on
first use, shares it between FIRE and SPAR, and serialises calls (llama.cpp is not thread-safe).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
from typing import Any, Protocol, runtime_checkable

from rebuttal.types import FireResult, SparResult


@runtime_checkable
class Services(Protocol):
    def analyze(self, text: str, id: str | None = None) -> FireResult: ...

    def respond(self, text: str, id: str | None = None) -> FireResult: ...

    def parse(self, text: str, lang: str = "en", track: str | None = None,
              id: str | None = None) -> SparResult: ...

    def health(self) -> dict[str, Any]:
        """At least `model` (name or None), `model_loaded` (bool) and `memory_size` (int|None)."""
        ...


def _memory_size(obj: Any) -> int | None:
    memory = getattr(obj, "memory", None)
    if memory is None:
        return None
    records = getattr(memory, "records", None)
    if records is not None:
        return len(records)
    try:
        return len(memory)
    except TypeError:
        return None


MODEL_KEYS = ("backend", "model", "base_url", "threads")
FIRE_KEYS = ("web", "memory_path")


class PipelineServices:
    """FIRE and SPAR sharing one chat model, each built on first use.

    `settings`: backend, model, base_url, threads (the model), web, memory_path (FIRE), and
    `spar` (a dict of SparSettings fields). Prebuilt `fire`/`spar` objects may be passed in.
    Calls are serialised unless the backend is an HTTP server that handles concurrency itself.
    """

    def __init__(self, settings: dict | None = None, *, fire: Any = None, spar: Any = None, model: Any = None):
        self.settings = {k: v for k, v in (settings or {}).items() if v is not None}
        unknown = set(self.settings) - {*MODEL_KEYS, *FIRE_KEYS, "spar"}
        if unknown:
            raise ValueError(f"unknown pipeline settings {sorted(unknown)}; use {', '.join((*MODEL_KEYS, *FIRE_KEYS, 'spar'))}")
        self._model, self._fire, self._spar = model, fire, spar
        self._build_lock = threading.RLock()
        self._call_lock = threading.Lock()

    def model_settings(self):
        """The ModelSettings these services load their one model with."""
        from rebuttal.llm import ModelSettings

        return ModelSettings.of(**{k: self.settings[k] for k in MODEL_KEYS if k in self.settings})

    def model(self):
        with self._build_lock:
            if self._model is None:
                from rebuttal.llm import load_model

                self._model = load_model(self.model_settings())
            return self._model

    def fire(self):
        with self._build_lock:
            if self._fire is None:
                from rebuttal.fire import build_system

                self._fire = build_system("fire", model=self.model(), web=bool(self.settings.get("web")),
                                          memory_path=self.settings.get("memory_path"))
                freeze_long_lived()
            return self._fire

    def spar(self):
        with self._build_lock:
            if self._spar is None:
                from rebuttal.spar import default_parser

                # The trained tagger by default, as `rebuttal parse` (issue 48); {"system": "spar"}
                # and SparSettings fields select the agents, which share the service's model.
                spar = dict(self.settings.get("spar", {}))
                self._spar = default_parser(None, system=spar.pop("system", "spar-tagger"), model=self.model, **spar)
                freeze_long_lived()
            return self._spar

    def _serial(self):
        model = self._model or getattr(self._fire, "model", None)
        concurrent = getattr(model, "concurrent_calls", False)  # e.g. an HTTP server queues requests itself
        return contextlib.nullcontext() if concurrent else self._call_lock

    def analyze(self, text: str, id: str | None = None) -> FireResult:
        pipeline = self.fire()
        with self._serial():
            return pipeline.analyze(text, id=id)

    def respond(self, text: str, id: str | None = None) -> FireResult:
        pipeline = self.fire()
        with self._serial():
            return pipeline.respond(text, id=id)

    def parse(self, text: str, lang: str = "en", track: str | None = None,
              id: str | None = None) -> SparResult:
        parser = self.spar()
        with self._serial():
            return parser.parse(text, lang=lang, track=track, id=id)

    def health(self) -> dict[str, Any]:
        return {
            "model": getattr(self._model or getattr(self._fire, "model", None), "name", None) or self.settings.get("model"),
            "model_loaded": self._model is not None or self._fire is not None,
            "memory_size": _memory_size(self._fire),
            "backend": self.settings.get("backend"),
        }


def freeze_long_lived() -> None:
    """Put what exists now out of the garbage collector's reach: a loaded FIRE pipeline is ~0.5 M
    tracked objects (memory records, models, the block library) that live as long as the process,
    and every full collection re-scanned them while holding the GIL, stalling every request in
    flight: the p99 of health and job-status calls at 32 clients was 236-244 ms with the model
    preloaded, 53-62 ms frozen, 43-59 ms without the preload (benchmarks/results/service_preload.md).
    The server freezes what exists at start (app.py); the pipelines load later, on the preload
    thread or on first use, so they are frozen here, after a collection, so no garbage is frozen
    with them."""
    gc.collect()
    gc.freeze()


def preload_in_background(services: Any) -> None:
    """Load the model, FIRE and its gate's model reader on a thread, so the first requests do not
    wait for them; failures show in the log (and in results). Objects without `fire()` (test
    fakes) are skipped."""
    if not hasattr(services, "fire"):
        return

    def load() -> None:
        try:
            pipeline = services.fire()
            if hasattr(pipeline, "warm_up"):
                pipeline.warm_up()  # the Chinese gate's reader: otherwise the first Chinese post waits ~1 min
                freeze_long_lived()
            logging.getLogger("rebuttal.server").info("model and FIRE pipeline loaded")
        except Exception as exc:  # noqa: BLE001
            logging.getLogger("rebuttal.server").error("could not load the FIRE pipeline: %s", exc)

    threading.Thread(target=load, name="rebuttal-preload", daemon=True).start()
