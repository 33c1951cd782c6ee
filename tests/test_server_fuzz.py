"""Schema-driven fuzzing of the API in-process (issue #50): schemathesis generates valid and
schema-breaking requests for every operation of the app's own OpenAPI document, a quarter of
them made hostile (benchmarks/service_fuzz_cases.py); no response may be a 5xx, and every error
must be JSON {"error", "detail"}. Bounded (~20 s); benchmarks/service_fuzz.py is the long run."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
schemathesis = pytest.importorskip("schemathesis")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import seed as hypothesis_seed  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from service_fuzz import Stats, send  # noqa: E402
from service_fuzz_cases import response_problem  # noqa: E402
from test_server_api import FakeServices, make_settings  # noqa: E402

from rebuttal.server import create_app  # noqa: E402
from rebuttal.server.auth import create_key  # noqa: E402

EXAMPLES = 12  # per operation and generation mode: ~400 requests


def test_response_problem_knows_the_documented_shape():
    assert response_problem(200, "application/json", b"{}") is None
    assert response_problem(422, "application/json", b'{"error": "invalid_request", "detail": "x"}') is None
    assert response_problem(503, "application/json", b'{"error": "unavailable", "detail": "x"}') == "server error 503"
    assert response_problem(404, "text/plain", b"Not Found") == "404 is not JSON (text/plain)"
    assert response_problem(422, "application/json", b'{"detail": []}') == "422 body lacks string `error` and `detail`"


@pytest.mark.timeout(180)
def test_generated_requests_never_get_a_5xx_or_an_undocumented_error(tmp_path):
    services = FakeServices()
    app = create_app(make_settings(tmp_path, rate_burst=1_000_000), services=services)
    db = app.state.rebuttal.db
    keys = {role: create_key(db, f"fuzz-{role}-7f3c", role) for role in ("admin", "submit")}
    stats, rng = Stats(), random.Random(50)
    with TestClient(app) as client:
        for index in range(5):  # review items for generated ids to find
            client.post("/v1/respond", json={"text": f"seed {index}"}, headers={"X-API-Key": keys["admin"]})
        schema = schemathesis.openapi.from_dict(client.get("/openapi.json").json())
        operations = [result.ok() for result in schema.get_all_operations()]
        for operation in operations:
            for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
                @hypothesis_seed(50)
                @given(case=operation.as_strategy(generation_mode=mode))
                @settings(max_examples=EXAMPLES, database=None, deadline=None, phases=[Phase.generate],
                          suppress_health_check=list(HealthCheck))
                def run(case):
                    send(client, case, rng, keys, stats, hostile_share=0.25)

                try:
                    run()
                except Unsatisfiable:  # an operation without parameters has nothing to break
                    pass
    assert len(operations) == 18 and len(stats.per_operation) == 18
    assert stats.requests >= 300 and stats.hostile >= 50
    assert stats.problems == [] and stats.client_errors == 0
    assert stats.server_errors == 0 and stats.bad_shape == 0
    assert {200, 401, 404, 422} <= set(stats.statuses) and max(stats.statuses) < 500
