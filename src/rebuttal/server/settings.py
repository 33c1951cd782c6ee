"""Server settings: CLI flags override REBUTTAL_* environment variables override defaults."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from rebuttal import config


def default_db_url() -> str:
    """$REBUTTAL_DB, else rebuttal.db in the user data folder (`rebuttal.config`)."""
    return config.db_url()


class ServerSettings(BaseModel):
    db_url: str = Field(default_factory=default_db_url, description="SQLAlchemy URL (sqlite:///file.db or postgresql+psycopg://...)")
    max_request_bytes: int = Field(1_000_000, ge=1024, description="larger bodies get 413")
    max_batch: int = Field(500, ge=1, description="items per batch request")
    max_text_chars: int = Field(5000, ge=1, description="characters per post")
    rate_per_minute: float = Field(60.0, gt=0, description="requests per minute per API key")
    rate_burst: int = Field(20, ge=1, description="requests a key may send at once")
    rate_store: Literal["database", "redis", "memory"] = Field(
        "database", description="where token buckets live: the database or Redis (shared by all workers) or this process")
    redis_url: str = Field("redis://localhost:6379/0", description="Redis for rate_store=redis")
    cors_origins: list[str] = Field(default_factory=list, description="empty = CORS off")
    job_poll_s: float = Field(1.0, gt=0, description="how often the batch worker checks for work")
    max_item_attempts: int = Field(3, ge=1, description="restarts an item survives before it fails")
    job_lease_s: float = Field(30.0, gt=0, description="a claimed batch item not renewed for this long "
                                                        "(its worker died) is taken over by another worker")
    cookie_secure: bool = Field(False, description="mark the reviewer cookie Secure (serve over HTTPS)")
    pipeline: dict = Field(default_factory=dict, description="settings passed to default_pipeline/default_parser")
    fake_pipeline: bool = Field(False, description="serve the fake pipeline (server/fake.py) instead of the "
                                                   "models: for load testing only")

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
        for env, name in config.SERVER_NUMBERS.items():
            if config.env(env):
                values[name] = config.env(env)
        for env, name in ((config.RATE_STORE, "rate_store"), (config.REDIS_URL, "redis_url")):
            if config.env(env):
                values[name] = config.env(env)
        if config.env_list(config.CORS_ORIGINS):
            values["cors_origins"] = config.env_list(config.CORS_ORIGINS)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
