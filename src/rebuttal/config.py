"""Every environment variable and default folder rebuttal reads, in one place.

This module sits at the bottom of the stack with `types`: it imports nothing from rebuttal, so
every layer (llm, data, memory, evidence, fire, spar, eval, server, cli) may use it. Values are
read when asked for, not at import, so tests can set variables with `monkeypatch.setenv`.

    REBUTTAL_HOME         user data folder (corpora, evidence index, web cache, NLTK data, the
                          server database); default ~/.local/share/rebuttal. REBUTTAL_DATA_DIR
                          is an older name for the same folder, read when REBUTTAL_HOME is unset.
    REBUTTAL_CACHE        cache root; embedded GGUF models go to <cache>/models
                          (default ~/.cache/rebuttal)
    REBUTTAL_BACKEND      llama | openai | transformers            (ModelSettings.backend)
    REBUTTAL_MODEL        registry name, GGUF path, served model   (ModelSettings.model)
    REBUTTAL_BASE_URL     OpenAI-compatible server URL              (ModelSettings.base_url)
    REBUTTAL_THREADS      CPU threads for llama.cpp                 (ModelSettings.threads)
    REBUTTAL_API_KEY      key for the OpenAI-compatible server (else OPENAI_API_KEY)
    REBUTTAL_DB           server database URL (default sqlite in REBUTTAL_HOME)
    REBUTTAL_MAX_REQUEST_BYTES, REBUTTAL_MAX_BATCH, REBUTTAL_RATE_PER_MINUTE,
    REBUTTAL_RATE_BURST, REBUTTAL_CORS_ORIGINS      server limits (ServerSettings.from_env)
    REBUTTAL_RATE_STORE   database (default: shared by every worker) | redis | memory (one process)
    REBUTTAL_REDIS_URL    Redis for `rate_store=redis` (default redis://localhost:6379/0)
    REBUTTAL_JOB_LEASE_S  seconds a batch item stays claimed by a worker that stopped renewing
                          it (a crashed process) before another worker takes it over
    REBUTTAL_DETOXIFY_CHECKPOINT                    local Detoxify checkpoint for `eval fire`
    REBUTTAL_CATEGORY_MODEL  FIRE category model (.npz from `rebuttal learned train-category`;
                          default: the shipped one)
    REBUTTAL_GATE_MODEL   hate gate (.npz from `rebuttal learned train-gate`; default: shipped)
    REBUTTAL_DRAFT_SCORE_MODEL  FIRE draft score (.npz from `rebuttal learned train-draft-score`;
                          default: shipped)
    REBUTTAL_BLOCKS       FIRE's reply blocks: comma-separated JSON-lines files that replace the
                          shipped library (fire/data/BLOCKS.md; default: shipped)
    REBUTTAL_RAY_ADDRESS  Ray cluster `rebuttal run --engine ray` joins (default: Ray's own
                          RAY_ADDRESS, else a local instance is started)
    REBUTTAL_RAY_CPUS     CPUs a local Ray instance may use (default: all of the machine's)
"""

from __future__ import annotations

import os
from pathlib import Path

HOME = "REBUTTAL_HOME"
HOME_ALIAS = "REBUTTAL_DATA_DIR"
CACHE = "REBUTTAL_CACHE"
BACKEND = "REBUTTAL_BACKEND"
MODEL = "REBUTTAL_MODEL"
BASE_URL = "REBUTTAL_BASE_URL"
THREADS = "REBUTTAL_THREADS"
API_KEY = "REBUTTAL_API_KEY"
DB = "REBUTTAL_DB"
DETOXIFY_CHECKPOINT = "REBUTTAL_DETOXIFY_CHECKPOINT"
CORS_ORIGINS = "REBUTTAL_CORS_ORIGINS"
RATE_STORE = "REBUTTAL_RATE_STORE"
REDIS_URL = "REBUTTAL_REDIS_URL"
CATEGORY_MODEL = "REBUTTAL_CATEGORY_MODEL"
GATE_MODEL = "REBUTTAL_GATE_MODEL"
DRAFT_SCORE_MODEL = "REBUTTAL_DRAFT_SCORE_MODEL"
BLOCKS = "REBUTTAL_BLOCKS"
RAY_ADDRESS = "REBUTTAL_RAY_ADDRESS"
RAY_CPUS = "REBUTTAL_RAY_CPUS"
SERVER_NUMBERS = {  # environment variable -> ServerSettings field
    "REBUTTAL_MAX_REQUEST_BYTES": "max_request_bytes", "REBUTTAL_MAX_BATCH": "max_batch",
    "REBUTTAL_RATE_PER_MINUTE": "rate_per_minute", "REBUTTAL_RATE_BURST": "rate_burst",
    "REBUTTAL_JOB_LEASE_S": "job_lease_s",
}

DEFAULT_BACKEND = "llama"
DEFAULT_BASE_URL = "http://localhost:8000/v1"
# `rebuttal run --engine ray` defaults: actors, CPUs/GPUs each, rows per batch sent to an actor.
DEFAULT_RAY_ACTORS = 2
DEFAULT_RAY_CPUS_PER_ACTOR = 1.0
DEFAULT_RAY_GPUS_PER_ACTOR = 0.0
DEFAULT_RAY_BATCH_SIZE = 16


def env(name: str, default: str | None = None) -> str | None:
    """The variable's value, or `default` when it is unset or empty."""
    return os.environ.get(name) or default


def env_list(name: str) -> list[str]:
    """A comma-separated variable as a list (empty when unset)."""
    return [item.strip() for item in (env(name) or "").split(",") if item.strip()]


def home_dir() -> Path:
    """The user data folder: $REBUTTAL_HOME, else $REBUTTAL_DATA_DIR, else ~/.local/share/rebuttal."""
    home = env(HOME) or env(HOME_ALIAS)
    return Path(home).expanduser() if home else Path.home() / ".local" / "share" / "rebuttal"


def cache_dir() -> Path:
    """The cache root: $REBUTTAL_CACHE, else ~/.cache/rebuttal."""
    root = env(CACHE)
    return Path(root).expanduser() if root else Path.home() / ".cache" / "rebuttal"


def _positive_int(name: str) -> int | None:
    value = env(name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {value!r}") from None
    return number if number > 0 else None


def threads() -> int | None:
    """$REBUTTAL_THREADS as a positive int, else None (the backend picks)."""
    return _positive_int(THREADS)


def ray_address() -> str | None:
    """$REBUTTAL_RAY_ADDRESS, else None (Ray reads its own RAY_ADDRESS, else starts locally)."""
    return env(RAY_ADDRESS)


def ray_cpus() -> int:
    """$REBUTTAL_RAY_CPUS, else every CPU of the machine: the bound of a local Ray instance."""
    return _positive_int(RAY_CPUS) or os.cpu_count() or 1


def db_url() -> str:
    """$REBUTTAL_DB, else a SQLite file in the user data folder."""
    return env(DB) or f"sqlite:///{home_dir() / 'rebuttal.db'}"
