"""Evidence passages on disk: the shipped starter corpus, user corpora, validation and import.

A corpus is a JSON Lines file, one passage per line:
    {"id": "ev-0001", "text": "...", "source": "ONS, Crime in England and Wales, 2023",
     "url": "https://..." | null, "date": "2023" | null, "tier": "institutional"|"mainstream",
     "topic": "migration-crime", "keywords": ["crime", "migrants"]}
`id`, `text` and `source` are required. User corpora are validated and copied into
`$REBUTTAL_HOME/evidence/corpora/` (default ~/.local/share/rebuttal), so `LocalEvidenceStore.default()`
finds them on every later run.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator

from rebuttal import config
from rebuttal.types import SourceTier

STARTER_CORPUS = "starter_corpus.jsonl"
MAX_PASSAGE_CHARS = 4000
_CORPUS_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class CorpusError(ValueError):
    """A corpus file is missing, unreadable or has an invalid row (message names line and field)."""


class Passage(BaseModel):
    id: str = Field(min_length=1, max_length=128)
    text: str = Field(min_length=1, max_length=MAX_PASSAGE_CHARS)
    source: str = Field(min_length=1, max_length=500)
    url: str | None = None
    date: str | None = None
    tier: SourceTier = SourceTier.mainstream
    topic: str | None = None
    keywords: list[str] = Field(default_factory=list)
    corpus: str = ""  # which corpus file the passage came from (set on load, not validated input)

    @field_validator("id", "text", "source")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("must not be blank")
        return value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://\S+$", value.strip()):
            raise ValueError("must be an http(s) URL or null")
        return value.strip() if value else None

    @field_validator("tier", "keywords", mode="before")
    @classmethod
    def _null_means_default(cls, value, info):
        if value is None:
            return SourceTier.mainstream if info.field_name == "tier" else []
        return value

    @field_validator("tier")
    @classmethod
    def _indexable_tier(cls, value: SourceTier) -> SourceTier:
        # Low-quality sources are dropped before generation, so indexing them would be pointless.
        if value == SourceTier.low:
            raise ValueError("'low' tier passages are not indexed; remove them or retier them")
        return value

    def lexical_text(self) -> str:
        """What BM25 sees: the passage plus its topic and keywords (curated search hints)."""
        extra = " ".join([self.topic or "", *self.keywords]).replace("-", " ")
        return f"{self.text} {extra}".strip()


def rebuttal_home() -> Path:
    """The user data folder: $REBUTTAL_HOME, else ~/.local/share/rebuttal."""
    return config.home_dir()


def user_corpus_dir() -> Path:
    return rebuttal_home() / "evidence" / "corpora"


def starter_corpus_path() -> Path:
    return Path(str(resources.files("rebuttal.evidence") / "data" / STARTER_CORPUS))


def default_corpus_paths() -> list[Path]:
    """The shipped starter corpus (when present) followed by every user corpus, by name."""
    paths = [p for p in [starter_corpus_path()] if p.exists()]
    folder = user_corpus_dir()
    if folder.is_dir():
        paths += sorted(folder.glob("*.jsonl"))
    return paths


def _field_path(error: dict) -> str:
    return ".".join(str(part) for part in error["loc"]) or "(row)"


def _rows(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, parsed JSON) for each non-blank line; CorpusError on bad JSON or encoding."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read the file ({exc.strerror})") from None
    with handle:
        line_no = 0
        try:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield line_no, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise CorpusError(f"{path}:{line_no}: invalid JSON ({exc.msg})") from None
        except UnicodeDecodeError:
            raise CorpusError(f"{path}:{line_no + 1}: not valid UTF-8") from None


def read_passages(path: str | Path, corpus: str | None = None) -> list[Passage]:
    """Validate a passage corpus. Every problem is reported as `file:line: field: reason`;
    duplicate ids in one file are an error (the generator cites passages by id)."""
    path = Path(path)
    name = corpus or path.stem
    passages: list[Passage] = []
    errors: list[str] = []
    first_line: dict[str, int] = {}
    for line_no, row in _rows(path):
        if not isinstance(row, dict):
            errors.append(f"{path}:{line_no}: expected a JSON object, got {type(row).__name__}")
            continue
        row = {k: v for k, v in row.items() if k != "corpus"}
        try:
            passage = Passage.model_validate(row)
        except ValidationError as exc:
            for err in exc.errors():
                errors.append(f"{path}:{line_no}: field '{_field_path(err)}': {err['msg']}")
            continue
        if passage.id in first_line:
            errors.append(f"{path}:{line_no}: field 'id': duplicate id {passage.id!r} "
                          f"(first on line {first_line[passage.id]})")
            continue
        first_line[passage.id] = line_no
        passages.append(passage.model_copy(update={"corpus": name}))
    _raise_if(errors, path)
    if not passages:
        raise CorpusError(f"{path}: no passages (the file is empty)")
    return passages


def read_memory_evidence(path: str | Path, corpus: str | None = None) -> tuple[list[Passage], int]:
    """Passages from memory records in the FactualCS silver format (`id`, `evidence`,
    `evidence_source`, `evidence_url`, `retrieval_query`). Rows with null evidence (the
    non-factual categories) are skipped; returns (passages, skipped count)."""
    path = Path(path)
    name = corpus or path.stem
    passages: list[Passage] = []
    errors: list[str] = []
    skipped = 0
    seen: set[str] = set()
    for line_no, row in _rows(path):
        if not isinstance(row, dict):
            errors.append(f"{path}:{line_no}: expected a JSON object, got {type(row).__name__}")
            continue
        if "id" not in row or "evidence" not in row:
            missing = "id" if "id" not in row else "evidence"
            errors.append(f"{path}:{line_no}: field '{missing}': missing (is this a memory file?)")
            continue
        evidence = row["evidence"]
        if evidence is None or (isinstance(evidence, str | list) and not evidence):
            skipped += 1
            continue
        if isinstance(evidence, list):
            evidence = " ".join(str(part) for part in evidence)
        record_id = str(row["id"])
        passage_id = f"mem-{record_id}"
        if passage_id in seen:
            errors.append(f"{path}:{line_no}: field 'id': duplicate id {record_id!r}")
            continue
        try:
            passage = Passage(
                id=passage_id,
                text=evidence,
                # Silver evidence is annotator-written: say so, so reviewers check it.
                source=row.get("evidence_source") or f"memory record {record_id} (unverified)",
                url=row.get("evidence_url") or None,
                tier=SourceTier.mainstream,
                topic=row.get("hs_type"),
                keywords=[row["retrieval_query"]] if row.get("retrieval_query") else [],
                corpus=name,
            )
        except ValidationError as exc:
            for err in exc.errors():
                field = {"text": "evidence", "source": "evidence_source",
                         "url": "evidence_url"}.get(_field_path(err), _field_path(err))
                errors.append(f"{path}:{line_no}: field '{field}': {err['msg']}")
            continue
        seen.add(passage_id)
        passages.append(passage)
    _raise_if(errors, path)
    if not passages:
        raise CorpusError(f"{path}: no rows with evidence ({skipped} rows had null evidence)")
    return passages, skipped


def _raise_if(errors: list[str], path: Path, show: int = 10) -> None:
    if errors:
        more = f"\n... and {len(errors) - show} more" if len(errors) > show else ""
        raise CorpusError(f"{path}: {len(errors)} invalid row(s):\n" + "\n".join(errors[:show]) + more)


def write_passages(passages: Iterable[Passage], path: Path) -> None:
    """Write atomically, so a crash never leaves a half-written corpus behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for passage in passages:
            handle.write(passage.model_dump_json(exclude={"corpus"}) + "\n")
    os.replace(tmp, path)


def add_corpus(path: str | Path, *, from_memory: bool = False, name: str | None = None,
               replace: bool = False) -> tuple[Path, int, int]:
    """Validate a corpus and copy it into the user data folder.

    Returns (installed path, passages added, rows skipped). Raises CorpusError when the file
    is invalid, the name is taken (unless `replace`), or an id collides with another corpus."""
    path = Path(path)
    name = name or path.stem
    if not _CORPUS_NAME.match(name) or name == Path(STARTER_CORPUS).stem:
        raise CorpusError(f"invalid corpus name {name!r}: use letters, digits, '.', '_' or '-' "
                          f"(and not {Path(STARTER_CORPUS).stem!r})")
    if from_memory:
        passages, skipped = read_memory_evidence(path, corpus=name)
    else:
        passages, skipped = read_passages(path, corpus=name), 0
    target = user_corpus_dir() / f"{name}.jsonl"
    if target.exists() and not replace:
        raise CorpusError(f"a corpus named {name!r} is already installed ({target}); "
                          "pass --replace to overwrite it or --name to pick another name")
    new_ids = {p.id for p in passages}
    for other in default_corpus_paths():
        if other.resolve() == target.resolve():
            continue
        clashes = sorted(new_ids & {p.id for p in read_passages(other)})
        if clashes:
            raise CorpusError(f"{path}: {len(clashes)} id(s) already used by corpus "
                              f"{other.stem!r}, e.g. {clashes[:3]}; ids must be unique")
    write_passages(passages, target)
    return target, len(passages), skipped


def remove_corpus(name: str) -> Path:
    target = user_corpus_dir() / f"{name}.jsonl"
    if not target.exists():
        raise CorpusError(f"no user corpus named {name!r} in {user_corpus_dir()}")
    target.unlink()
    return target


def list_corpora() -> list[dict]:
    """Name, path, passage count and whether it ships with rebuttal, for every default corpus."""
    out = []
    for path in default_corpus_paths():
        try:
            count, error = len(read_passages(path)), None
        except CorpusError as exc:
            count, error = 0, str(exc).splitlines()[0]
        out.append({"name": path.stem, "path": str(path), "passages": count,
                    "shipped": path == starter_corpus_path(), "error": error})
    return out


def load_passages(paths: Iterable[str | Path]) -> list[Passage]:
    """All passages of several corpora; an id appearing in two corpora is an error."""
    passages: list[Passage] = []
    owner: dict[str, str] = {}
    for path in paths:
        for passage in read_passages(path):
            if passage.id in owner:
                raise CorpusError(f"{path}: id {passage.id!r} is also in corpus "
                                  f"{owner[passage.id]!r}; ids must be unique across corpora")
            owner[passage.id] = passage.corpus
            passages.append(passage)
    return passages
