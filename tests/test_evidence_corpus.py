"""Corpus validation, user corpora in REBUTTAL_HOME, memory evidence import, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_evidence_store import HashEncoder
from typer.testing import CliRunner

from rebuttal.evidence import (
    CorpusError, LocalEvidenceStore, add_corpus, list_corpora, read_memory_evidence, read_passages,
)
from rebuttal.evidence.commands import app
from rebuttal.evidence.corpus import starter_corpus_path

GOOD = {"id": "u-1", "text": "Zyxwv lakes hold fresh water.", "source": "Lake Survey 2020",
        "url": "https://lakes.example.org/report", "date": "2020", "tier": "institutional",
        "topic": "lakes", "keywords": ["zyxwv", "lakes"]}


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("REBUTTAL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n",
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("bad_row, line_field", [
    ({"id": "u-2", "source": "S"}, ":2: field 'text': Field required"),
    ({"id": "u-2", "text": "t", "source": "S", "tier": "blog"}, ":2: field 'tier'"),
    ({"id": "u-2", "text": "t", "source": "S", "tier": "low"}, "'low' tier passages are not indexed"),
    ({"id": "u-2", "text": "t", "source": "S", "url": "lakes.example.org"}, ":2: field 'url'"),
    ({"id": "u-2", "text": "   ", "source": "S"}, ":2: field 'text'"),
    ({"id": "u-1", "text": "again", "source": "S"}, ":2: field 'id': duplicate id 'u-1' (first on line 1)"),
    ('{"id": "u-2", "text": ', ":2: invalid JSON"),
    ('["a list"]', ":2: expected a JSON object"),
])
def test_invalid_rows_name_the_line_and_field(tmp_path, bad_row, line_field):
    path = write_jsonl(tmp_path / "bad.jsonl", [GOOD, bad_row])
    with pytest.raises(CorpusError) as info:
        add_corpus(path)
    assert line_field in str(info.value)
    assert not (tmp_path / "home").exists()  # nothing installed


def test_empty_and_missing_files_are_clear_errors(tmp_path):
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="no passages"):
        read_passages(tmp_path / "empty.jsonl")
    with pytest.raises(CorpusError, match="cannot read"):
        read_passages(tmp_path / "missing.jsonl")


def test_add_corpus_installs_a_validated_copy(tmp_path, home):
    path = write_jsonl(tmp_path / "lakes.jsonl", [GOOD, {**GOOD, "id": "u-2", "url": None}])
    target, added, skipped = add_corpus(path)
    assert (added, skipped) == (2, 0)
    assert target == home / "evidence" / "corpora" / "lakes.jsonl"
    installed = read_passages(target)
    assert [p.id for p in installed] == ["u-1", "u-2"] and installed[1].url is None
    listed = {c["name"]: c for c in list_corpora()}
    assert listed["lakes"]["passages"] == 2 and listed["lakes"]["shipped"] is False

    with pytest.raises(CorpusError, match="already installed"):
        add_corpus(path)
    write_jsonl(path, [GOOD])
    assert add_corpus(path, replace=True)[1] == 1
    with pytest.raises(CorpusError, match="invalid corpus name"):
        add_corpus(path, name="../escape")


def test_ids_must_not_clash_with_other_corpora(tmp_path):
    add_corpus(write_jsonl(tmp_path / "a.jsonl", [GOOD]))
    with pytest.raises(CorpusError, match="already used by corpus 'a'"):
        add_corpus(write_jsonl(tmp_path / "b.jsonl", [GOOD]))


def test_memory_records_are_indexed_and_null_evidence_skipped(tmp_path):
    rows = [
        {"id": "fcs-1", "hate_speech": "x", "hs_type": "misinformation", "retrieval_query": "crime rates",
         "evidence": "Crime fell by 10% in 2020.", "evidence_source": "Police report"},
        {"id": "fcs-2", "hate_speech": "y", "hs_type": "nonfactual", "retrieval_query": None,
         "evidence": None, "evidence_source": None},
        {"id": "fcs-3", "evidence": ["First fact.", "Second fact."], "evidence_source": None,
         "evidence_url": "https://stats.example.org/x", "retrieval_query": "q"},
    ]
    passages, skipped = read_memory_evidence(write_jsonl(tmp_path / "mem.jsonl", rows))
    assert skipped == 1
    assert [p.id for p in passages] == ["mem-fcs-1", "mem-fcs-3"]
    assert passages[0].source == "Police report" and passages[0].keywords == ["crime rates"]
    assert passages[1].text == "First fact. Second fact."
    assert passages[1].source == "memory record fcs-3 (unverified)"
    assert passages[1].url == "https://stats.example.org/x"

    with pytest.raises(CorpusError, match=r":1: field 'evidence': missing"):
        read_memory_evidence(write_jsonl(tmp_path / "not_memory.jsonl", [GOOD]))


def test_silver_memory_file_imports(shared_data):
    passages, skipped = read_memory_evidence(shared_data / "factualcs-silver" / "dev.jsonl")
    assert passages and skipped > 0
    assert all(p.id.startswith("mem-fcs-") and p.text for p in passages)


def test_default_store_has_starter_and_user_corpora(tmp_path):
    add_corpus(write_jsonl(tmp_path / "lakes.jsonl", [GOOD]))
    store = LocalEvidenceStore.default(encoder=HashEncoder())
    corpora = {p.corpus for p in store.passages}
    assert "lakes" in corpora
    if starter_corpus_path().exists():
        assert "starter_corpus" in corpora and len(store) >= 150
    assert store.search("zyxwv lakes", k=1)[0].id == "u-1"


class FakeMiniLM:
    def __init__(self):
        self.encode = HashEncoder()


def test_cli_add_list_search_json(tmp_path, monkeypatch):
    monkeypatch.setattr("rebuttal.llm.embeddings.load_minilm", lambda *a: FakeMiniLM())
    runner = CliRunner()
    path = write_jsonl(tmp_path / "lakes.jsonl", [GOOD])
    result = runner.invoke(app, ["add", str(path)])
    assert result.exit_code == 0, result.output
    assert "added 1 passages as corpus 'lakes'" in result.output

    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0 and "lakes" in result.output and "1 passages" in result.output

    result = runner.invoke(app, ["search", "zyxwv lakes fresh water", "--k", "2", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["items"][0]["id"] == "u-1" and payload["items"][0]["tier"] == "institutional"
    assert payload["searcher"] == "local" and payload["notes"] == []


def test_cli_reports_errors_without_traceback(tmp_path):
    runner = CliRunner()
    path = write_jsonl(tmp_path / "bad.jsonl", [{"id": "x"}])
    result = runner.invoke(app, ["add", str(path)])
    assert result.exit_code == 1
    assert "field 'text'" in result.output and "Traceback" not in result.output
    mem = write_jsonl(tmp_path / "mem.jsonl", [{"id": "fcs-9", "evidence": None}])
    result = runner.invoke(app, ["add", "--from-memory", str(mem)])
    assert result.exit_code == 1 and "null evidence" in result.output
