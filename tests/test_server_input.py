"""Issue #50: hostile text at the boundary. Lone surrogates, NUL, invisible and bidi control
characters in posts, ids and review text, through the API (single and batch), the review
actions, the CLI and the batch runner: a 422 or an error item, never a 500 or a traceback."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from test_server_api import server, wait_for_job  # noqa: E402,F401 - the fixture

from rebuttal.types import InputError, check_post, clean_text  # noqa: E402

SURROGATE_BODY = b'{"text": "Women are \\ud800 dumb"}'  # JSON's escape: a lone surrogate after parsing
JSON = {"Content-Type": "application/json"}


def test_check_post_refuses_lone_surrogates_with_their_position():
    for text, where in (("Women are \ud800 dumb", "(U+D800) at position 10"), ("\udcff", "(U+DCFF) at position 0")):
        with pytest.raises(InputError) as refused:
            check_post(text)
        assert str(refused.value) == f"text contains a lone surrogate {where}"


def test_check_post_removes_nul_invisible_and_bidi_controls_but_keeps_joiners_and_marks():
    hidden = "s\u200bl\u2060u\u00adr\ufeff \x00x"
    assert check_post(hidden) == "slur x"
    assert check_post("\u202eevil\u202c \u2066isolated\u2069 \u202a\u202b\u202d") == "evil isolated"
    kept = "\U0001F469\u200d\U0001F467 \u0645\u200c\u0627 \u200fabc\u200e\u061c"
    assert check_post(kept) == kept


def test_clean_text_names_the_field():
    with pytest.raises(InputError, match=r"^reason contains a lone surrogate \(U\+DC00\) at position 3$"):
        clean_text("ok \udc00", "reason")


@pytest.mark.parametrize("path", ["/v1/analyze", "/v1/respond", "/v1/parse"])
def test_single_post_with_a_lone_surrogate_is_422_and_nothing_runs(server, path):
    client, _, _, services = server
    response = client.post(path, content=SURROGATE_BODY, headers=JSON)
    assert response.status_code == 422
    assert response.json() == {"error": "invalid_text",
                               "detail": "text contains a lone surrogate (U+D800) at position 10"}
    assert services.calls == []


def test_bidi_overrides_are_stripped_before_the_pipeline_sees_the_post(server):
    client, _, _, services = server
    body = client.post("/v1/analyze", json={"text": "they are \u202evermin\u202c\u200b"}).json()
    assert body["result"]["text"] == "they are vermin"
    assert services.calls == [("analyze", "they are vermin")]


@pytest.mark.parametrize("path", ["/v1/analyze", "/v1/respond", "/v1/parse"])
def test_a_bad_item_in_a_batch_is_an_error_item_and_the_others_run(server, path):
    client, _, _, services = server
    items = b'[{"text": "Women are \\ud800 dumb", "id": "bad"}, {"text": "they are vermin", "id": "good"},' \
            b' {"text": "  ", "id": "empty"}, {"text": "a\\u0000b", "id": "nul"}]'
    response = client.post(path, content=b'{"items": ' + items + b"}", headers=JSON)
    assert response.status_code == 202 and response.json()["total"] == 4
    status = wait_for_job(client, response.json()["job_id"])
    assert (status["done"], status["errors"]) == (4, 2)
    results = client.get(response.json()["results_url"]).json()["items"]
    assert [(r["id"], r["status"]) for r in results] == [("bad", "error"), ("good", "done"), ("empty", "error"),
                                                         ("nul", "done")]
    assert results[0]["error"] == "text contains a lone surrogate (U+D800) at position 10"
    assert results[0]["result"]["status"] == "error" and results[0]["result"]["text"] == "Women are \ufffd dumb"
    assert results[2]["error"] == "text is empty" and results[2]["result_id"]
    assert results[3]["result"]["text"] == "ab"
    assert sorted(text for _, text in services.calls) == ["ab", "they are vermin"]


@pytest.mark.parametrize("body, where", [
    (b'{"text": "x", "id": "\\ud800"}', "id"),
    (b'{"text": "x", "id": "a\\u0000"}', "id"),
    (b'{"items": [{"text": "x"}, {"text": "y", "id": "\\udfff"}]}', "items.1.id"),
    (b'{"text": "x", "track": "\\ud800"}', "track"),
])
def test_short_fields_that_cannot_be_stored_are_schema_errors(server, body, where):
    client, _, _, services = server
    response = client.post("/v1/parse", content=body, headers=JSON)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert response.json()["error"] == "invalid_request" and detail.startswith(f"{where}: contains ")
    assert detail.endswith("; it cannot be stored") and ("lone surrogate" in detail or "NUL" in detail)
    assert response.json()["errors"][0]["type"] == "unstorable_character"
    assert services.calls == []


def test_an_unknown_key_holding_a_surrogate_is_422_not_500(server):
    client, _, _, _ = server
    response = client.post("/v1/respond", content=b'{"text": "x", "\\ud800": 1}', headers=JSON)
    assert response.status_code == 422 and response.json()["error"] == "invalid_request"


def test_review_edit_reject_and_approve_refuse_lone_surrogates(server):
    client, _, _, _ = server
    review_id = client.post("/v1/respond", json={"text": "they are vermin"}).json()["review_id"]
    for action, body, field in (("edit", b'{"text": "ok \\udc00"}', "text"),
                                ("approve", b'{"text": "ok \\udc00"}', "text"),
                                ("reject", b'{"reason": "ok \\udc00"}', "reason")):
        response = client.post(f"/v1/review/{review_id}/{action}", content=body, headers=JSON)
        assert response.status_code == 422, action
        assert response.json() == {"error": "invalid_request",
                                   "detail": f"{field} contains a lone surrogate (U+DC00) at position 3"}
    item = client.get(f"/v1/review/{review_id}").json()
    assert item["status"] == "pending" and item["reply"] == "A calm answer about dehumanization."
    edited = client.post(f"/v1/review/{review_id}/edit", json={"text": "A \u202ecalm\u202c reply\x00"}).json()
    assert edited["reply"] == "A calm reply"


BIG = 2**63  # one past the largest database integer


@pytest.mark.parametrize("method, path", [
    ("get", f"/v1/review/{BIG}"), ("post", f"/v1/review/{BIG}/edit"), ("post", f"/v1/review/{BIG}/approve"),
    ("post", f"/v1/review/{BIG}/reject"), ("get", f"/v1/review/{10**40}"), ("get", "/v1/review/0"),
])
def test_review_ids_out_of_range_are_422(server, method, path):
    client, _, _, _ = server
    response = client.request(method, path, json={"text": "x", "reason": "y"})
    assert response.status_code == 422
    assert response.json()["error"] == "invalid_request" and response.json()["detail"].startswith("path.review_id: ")


def test_the_largest_review_id_is_a_404_and_offsets_are_bounded(server):
    client, _, _, _ = server
    response = client.get(f"/v1/review/{BIG - 1}")
    assert response.status_code == 404 and response.json()["detail"] == f"review item {BIG - 1} not found"
    for path in (f"/v1/review?offset={BIG}", f"/v1/jobs/x/results?offset={BIG}"):
        response = client.get(path)
        assert response.status_code == 422 and response.json()["detail"].startswith("query.offset: ")
    assert client.get(f"/v1/review?offset={BIG - 1}").json()["items"] == []


def test_review_page_ids_out_of_range_are_422_and_its_offset_is_clamped(server):
    client, _, key, _ = server
    client.cookies.set("rebuttal_key", key)
    for method in ("get", "post"):
        response = client.request(method, f"/review/items/{BIG}")
        assert response.status_code == 422 and response.json()["detail"].startswith("path.review_id: ")
    assert client.get(f"/review?offset={10**30}").status_code == 200


@pytest.mark.parametrize("body, detail", [
    ('{"text": "café"}'.encode("latin-1"), "the body is not valid UTF-8 (byte 13); send JSON encoded as UTF-8"),
    (b'{"text": "\xff\xfe"}', "the body is not valid UTF-8 (byte 10); send JSON encoded as UTF-8"),
    (b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "the body's JSON is nested too deeply"),
    (b'{"text": ' + b"7" * 5000 + b"}", "the body is not valid JSON: Exceeds the limit (4300 digits)"),
    (b'{"text": "x"', "the body is not valid JSON (near character 12)"),
])
def test_unreadable_bodies_are_422_saying_why(server, body, detail):
    client, _, _, services = server
    response = client.post("/v1/respond", content=body, headers=JSON)
    assert response.status_code == 422
    assert response.json()["error"] == "invalid_request" and response.json()["detail"].startswith(detail)
    assert services.calls == []


def test_cli_respond_reports_a_lone_surrogate_without_a_traceback():
    from typer.testing import CliRunner

    from rebuttal.cli import app

    result = CliRunner().invoke(app, ["respond", "Women are \udcff dumb"])
    assert result.exit_code == 1 and isinstance(result.exception, (SystemExit, type(None)))
    assert "invalid input: text contains a lone surrogate (U+DCFF) at position 10" in result.output


def test_batch_run_writes_rows_whose_input_held_lone_surrogates(tmp_path):
    from rebuttal.data.batch import items_from_rows, read_json_rows, run_batch
    from rebuttal.types import FireResult

    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a\\ud800", "text": "Women are \\ud800 dumb"}\n{"id": "b", "text": "fine"}\n')

    def process(item):  # what the pipelines do: an error result that echoes the bad text
        try:
            return FireResult(id=item.id, text=check_post(item.text), status="ok")
        except InputError as exc:
            return FireResult(id=item.id, text=item.text, status="error", message=f"invalid input: {exc}")

    output = tmp_path / "out.jsonl"
    summary = run_batch(items_from_rows(read_json_rows(source)), process, output, progress=False)
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert (summary.done, summary.errors) == (1, 1)
    assert rows[0]["id"] == "a\ufffd" and rows[0]["text"] == "Women are \ufffd dumb"
    assert rows[0]["message"] == "invalid input: text contains a lone surrogate (U+D800) at position 10"
    again = run_batch(items_from_rows(read_json_rows(source)), process, output, progress=False)
    assert again.skipped == 2  # the written id matches the id read back: resuming skips it
