"""Server settings: CLI flags override REBUTTAL_* environment variables override defaults."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field, field_validator


def default_db_url() -> str:
    if os.environ.get("REBUTTAL_DB"):
        return os.environ["REBUTTAL_DB"]
    root = Path(os.environ.get("REBUTTAL_DATA_DIR") or Path.home() / ".local" / "share" / "rebuttal")
    return f"sqlite:///{root / 'rebuttal.db'}"


def _env_list(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]


class ServerSettings(BaseModel):
    db_url: str = Field(default_factory=default_db_url, description="SQLAlchemy URL (sqlite:///file.db or postgresql+psycopg://...)")
    max_request_bytes: int = Field(1_000_000, ge=1024, description="larger bodies get 413")
    max_batch: int = Field(500, ge=1, description="items per batch request")
    max_text_chars: int = Field(5000, ge=1, description="characters per post")
    rate_per_minute: float = Field(60.0, gt=0, description="requests per minute per API key")
    rate_burst: int = Field(20, ge=1, description="requests a key may send at once")
    cors_origins: list[str] = Field(default_factory=list, description="empty = CORS off")
    job_poll_s: float = Field(1.0, gt=0, description="how often the batch worker checks for work")
    max_item_attempts: int = Field(3, ge=1, description="restarts an item survives before it fails")
    cookie_secure: bool = Field(False, description="mark the reviewer cookie Secure (serve over HTTPS)")
    pipeline: dict = Field(default_factory=dict, description="settings passed to default_pipeline/default_parser")

    @field_validator("cors_origins")
    @classmethod
    def explicit_origins(cls, origins: list[str]) -> list[str]:
        for origin in origins:
            if origin == "*" or not origin.startswith(("http://", "https://")):
                raise ValueError(
                    f"CORS origin {origin!r} is not allowed: list explicit origins such as https://review.example.org"
                )
        return origins

    @classmethod
    def from_env(cls, **overrides) -> ServerSettings:
        values: dict = {}
        numeric = {
            "REBUTTAL_MAX_REQUEST_BYTES": "max_request_bytes", "REBUTTAL_MAX_BATCH": "max_batch",
            "REBUTTAL_RATE_PER_MINUTE": "rate_per_minute", "REBUTTAL_RATE_BURST": "rate_burst",
        }
        for env, name in numeric.items():
            if os.environ.get(env):
                values[name] = os.environ[env]
        if _env_list("REBUTTAL_CORS_ORIGINS"):
            values["cors_origins"] = _env_list("REBUTTAL_CORS_ORIGINS")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
