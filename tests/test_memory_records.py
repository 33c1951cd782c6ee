"""Loaders for FactualCS-style records: both layouts, four file formats, clear errors."""

from __future__ import annotations

import csv
import json

import pytest

from rebuttal.memory.records import (
    DatasetError,
    MemoryRecord,
    default_bank_paths,
    load_many,
    load_records,
    write_records,
)
from rebuttal.types import HateType

SILVER = {
    "id": "fcs-1", "source": "x", "hate_speech": "They all lie about the numbers.", "is_hateful": True,
    "hs_type": "misinformation", "target_group": "Immigrants", "reasoning": "A checkable claim.",
    "retrieval_query": "immigration statistics", "evidence": "Official data say otherwise.",
    "evidence_source": "ONS", "counterspeech": "The data say otherwise.",
    "counterspeech_refs": ["The data say otherwise.", "Look it up."], "annotation_confidence": "high",
}
PUBLIC = {
    "HS": "They are animals.", "target_group": "Muslims", "hs_type": "dehumanization_hate",
    "analyst_reasoning": "Animal metaphor.", "retrieval_query": None, "retrieved_evidence": None,
    "counterspeech": "They are people.",
}


def write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_silver_layout(tmp_path):
    [record] = load_records(write_jsonl(tmp_path / "s.jsonl", [SILVER]))
    assert record.id == "fcs-1" and record.category is HateType.misinformation
    assert record.search_query == "immigration statistics" and record.evidence_source == "ONS"
    assert record.references == ["The data say otherwise.", "Look it up."]


def test_public_layout_in_every_format(tmp_path):
    other = {**PUBLIC, "HS": "Women can't do maths.", "hs_type": "stereotype_hate",
             "retrieval_query": "women mathematics", "retrieved_evidence": ["Fact one.", "Fact two."]}
    rows = [PUBLIC, {**other, "retrieved_evidence": "Fact one. Fact two."}]
    write_jsonl(tmp_path / "p.jsonl", [PUBLIC, other])
    (tmp_path / "p.json").write_text(json.dumps({"data": [PUBLIC, other]}), encoding="utf-8")
    with (tmp_path / "p.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(PUBLIC))
        writer.writeheader()
        writer.writerows([{k: ("" if v is None else v) for k, v in r.items()} for r in rows])
    files = ["p.jsonl", "p.json", "p.csv"]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), tmp_path / "p.parquet")
        files.append("p.parquet")
    except ImportError:
        pass
    for name in files:
        first, second = load_records(tmp_path / name)
        assert first.id == "p-1" and first.hate_speech == "They are animals.", name
        assert first.category is HateType.dehumanization and first.search_query is None, name
        assert first.evidence is None and first.references == ["They are people."], name
        assert second.category is HateType.stereotype and second.evidence == "Fact one. Fact two.", name


def test_missing_field_names_file_row_and_field(tmp_path):
    bad = {k: v for k, v in PUBLIC.items() if k != "analyst_reasoning"}
    path = write_jsonl(tmp_path / "bad.jsonl", [PUBLIC, bad])
    with pytest.raises(DatasetError) as info:
        load_records(path)
    message = str(info.value)
    assert "bad.jsonl" in message and "row 2" in message and "'reasoning'" in message
    assert "analyst_reasoning" in message and "row 1" not in message


def test_malformed_rows_are_all_reported(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([
        json.dumps(SILVER),
        "{not json",
        json.dumps({**SILVER, "id": "x2", "hs_type": "sarcasm"}),
        json.dumps([1, 2]),
        json.dumps({**SILVER, "id": "x4", "is_hateful": "maybe"}),
        json.dumps({**SILVER, "id": "x5", "hate_speech": "   "}),
    ]), encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_records(path)
    message = str(info.value)
    assert "5 unusable row(s) of 6" in message
    assert "row 2: line 2: invalid JSON" in message
    assert "row 3: unknown category 'sarcasm'" in message
    assert "row 4: expected an object, got list" in message
    assert "row 5: field 'is_hateful' must be true/false" in message
    assert "row 6: missing field 'hate_speech'" in message


def test_file_level_errors(tmp_path):
    with pytest.raises(DatasetError, match="file not found"):
        load_records(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="no records"):
        load_records(tmp_path / "empty.jsonl")
    (tmp_path / "latin.jsonl").write_bytes(b'{"HS": "caf\xe9"}\n')
    with pytest.raises(DatasetError, match="not valid UTF-8"):
        load_records(tmp_path / "latin.jsonl")
    write_jsonl(tmp_path / "dup.jsonl", [SILVER, SILVER])
    with pytest.raises(DatasetError, match="duplicate record id 'fcs-1'"):
        load_records(tmp_path / "dup.jsonl")
    (tmp_path / "broken.parquet").write_bytes(b"not parquet")
    pytest.importorskip("pyarrow")
    with pytest.raises(DatasetError, match="cannot read"):
        load_records(tmp_path / "broken.parquet")


def test_write_and_read_back(tmp_path):
    records = load_records(write_jsonl(tmp_path / "s.jsonl", [SILVER, {**PUBLIC, "id": "p"}]))
    write_records(records, tmp_path / "out.jsonl")
    assert load_records(tmp_path / "out.jsonl") == records


def test_shipped_bank_is_complete():
    paths = default_bank_paths()
    assert [p.name for p in paths] == ["exemplars_factual.jsonl", "exemplars_normative.jsonl"]
    records = load_many(["default"])
    for category in HateType:
        mine = [r for r in records if r.category is category]
        assert len(mine) >= 30, category
        for r in mine:
            assert r.target_group and r.reasoning and r.counterspeech, r.id
            if category.needs_evidence:
                assert r.search_query and r.evidence and r.evidence_source, r.id
    assert all(isinstance(r, MemoryRecord) for r in records)


def test_silver_files_load(shared_data):
    train = load_records(shared_data / "factualcs-silver" / "train.jsonl")
    dev = load_records(shared_data / "factualcs-silver" / "dev.jsonl")
    assert len(train) == 887 and len(dev) == 106
    assert sum(r.category is HateType.stereotype for r in train) == 303
