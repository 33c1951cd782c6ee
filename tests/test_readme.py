"""README.md cannot drift from the results files it cites (issue #49): every file it links exists,
and every number in a table row that links a benchmarks/results file appears in that file. Reads
text only (no models, no data), so it is fast and skips nothing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PENDING = "TBD-FIRE"  # a row whose numbers the FIRE run has not written yet (issue #46)
COMMANDS = [
    ('bash scripts/setup.sh && .venv/bin/rebuttal respond "Immigrants are flooding in and most of them end up as '
     'criminals living off benefits."'),
    "bash scripts/setup.sh && .venv/bin/python -m pytest -q -p no:cacheprovider",
]


def numbers(text: str) -> list[str]:
    """Numbers as written: 0.912, 97, 104, 1:08.74, 3.14; not the digits inside words (F1, p95, 1.5B, qwen2.5)."""
    tokens = (token.rstrip(".:") for token in re.findall(r"[\w.:]+", text))
    return [token for token in tokens if re.fullmatch(r"\d+(?:[.:]\d+)*", token)]


def links(text: str) -> list[str]:
    """Relative link targets, without their #anchor."""
    return [target.split("#", 1)[0] for target in LINK.findall(text)
            if not target.startswith(("http://", "https://", "#", "mailto:"))]


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|") and not re.fullmatch(r"[|\s:-]+", line)]


def results_rows() -> list[tuple[str, list[Path]]]:
    """Table rows that cite a results file, with the files they cite."""
    rows = []
    for row in table_rows(README.read_text(encoding="utf-8")):
        cited = [ROOT / target for target in links(row) if target.startswith("benchmarks/results/")]
        if cited:
            rows.append((row, cited))
    return rows


def written_by_a_script(path: Path) -> bool:
    """A results file not written yet is allowed in a pending row if a benchmark script writes it."""
    relative = str(path.relative_to(ROOT))
    return any(relative in script.read_text(encoding="utf-8") for script in (ROOT / "benchmarks").glob("*.py"))


def test_the_two_commands_open_the_readme_as_ci_runs_them():
    text = README.read_text(encoding="utf-8")
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    assert block.splitlines() == COMMANDS
    assert text.index("```bash") < text.index("\n## ")  # before any section


def test_the_readme_is_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def test_every_file_the_readme_links_exists():
    text = README.read_text(encoding="utf-8")
    pending = {target for row in table_rows(text) if PENDING in row for target in links(row)}
    missing = [target for target in links(text) if not (ROOT / target).exists()
               and not (target in pending and written_by_a_script(ROOT / target))]
    assert links(text) and not missing


def test_every_number_in_a_results_row_is_in_the_file_it_links():
    rows = results_rows()
    assert len(rows) >= 10  # the headline and hardware tables
    checked = 0
    for row, cited in rows:
        if PENDING in row:
            continue  # the lead fills these in when the FIRE run is graded
        found = set()
        for path in cited:
            assert path.exists(), path
            found |= set(numbers(path.read_text(encoding="utf-8")))
        cells = LINK.sub("", row)
        absent = [number for number in numbers(cells) if number not in found]
        assert not absent, f"{absent} not in {[p.name for p in cited]}: {row}"
        checked += 1
    assert checked >= 10


def test_the_number_reader():
    assert numbers("0.912 / 0.123, 97/104 (0.93); F1 × 100, p95 37.8 ms at 32 clients, 1.5B, 1:08.74.") == \
        ["0.912", "0.123", "97", "104", "0.93", "100", "37.8", "32", "1:08.74"]
