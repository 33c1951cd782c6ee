"""Write an EvalReport as Markdown, HTML and JSON, with PNG plots beside them."""

from __future__ import annotations

import html
import json
from pathlib import Path

from rebuttal.eval.fire_io import CATEGORIES
from rebuttal.optional import require

MAX_LISTED_IDS = 50  # longer id lists are cut in md/html; report.json has them all

Table = tuple[list[str], list[list[str]]]  # header, rows


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2e}" if value < 0.001 else f"{value:.4f}"


def _arrow(spec) -> str:
    return f"{spec.label} {'↑' if spec.higher_is_better else '↓'}"


def _best(report, key: str) -> set[str]:
    spec = next(m for m in report.metrics if m.key == key)
    values = {s.name: s.means.get(key) for s in report.systems if s.means.get(key) is not None}
    if len(values) < 2:
        return set()
    target = (max if spec.higher_is_better else min)(values.values())
    return {name for name, v in values.items() if v == target}


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:MAX_LISTED_IDS])
    return shown + (f" … (+{len(ids) - MAX_LISTED_IDS} more in report.json)" if len(ids) > MAX_LISTED_IDS else "")


def _coverage_section(report) -> tuple[str, Table]:
    rows = []
    for s in report.systems:
        statuses: dict[str, int] = {}
        for status in s.no_reply.values():
            statuses[status] = statuses.get(status, 0) + 1
        rows.append([
            s.name, f"{s.n_scored}/{s.n_gold}", _fmt(s.coverage), str(len(s.missing_in_pred)),
            ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())) or "0",
            str(len(s.extra_in_pred)), str(len(s.bad_rows)), str(len(s.duplicate_ids)),
            str(len(s.no_category)),
        ])
    return ("Items", (["system", "scored/gold", "coverage", "missing in pred", "no reply (status)",
                       "not in gold", "bad rows", "duplicate ids", "no category"], rows))


def _metrics_section(report) -> tuple[str, Table]:
    best = {m.key: _best(report, m.key) for m in report.metrics}
    rows = []
    for s in report.systems:
        cells = [s.name]
        for m in report.metrics:
            cell = _fmt(s.means.get(m.key))
            cells.append(f"**{cell}**" if s.name in best[m.key] else cell)
        rows.append(cells)
    return ("Metrics (mean over scored items; ↑ higher is better, ↓ lower is better)",
            (["system"] + [_arrow(m) for m in report.metrics], rows))


def _tests_section(report) -> tuple[str, Table]:
    a, b = report.systems[0].name, report.systems[1].name
    rows = [
        [next(m.label for m in report.metrics if m.key == t.metric), str(t.n), _fmt(t.mean_a),
         _fmt(t.mean_b), _fmt(t.t, 3), _p(t.p), "yes" if t.significant else "no", t.better or "n/a", t.note]
        for t in report.tests
    ]
    return (f"Paired two-tailed t-tests ({a} vs {b}, α = 0.05)",
            (["metric", "n", f"mean {a}", f"mean {b}", "t", "p", "significant", "better", "note"], rows))


def _system_sections(report, s) -> list[tuple[str, Table]]:
    """Per-category means, the category confusion and the CatAcc/FSc parts of one system."""
    cat_rows = [[c, str(s.category_counts.get(c, 0))] + [_fmt(s.by_category[c].get(m.key)) for m in report.metrics]
                for c in CATEGORIES]
    columns = list(CATEGORIES) + ["none"]
    conf_rows = [[g] + [str(s.confusion.get(g, {}).get(p, 0)) for p in columns]
                 for g in columns if g in s.confusion or g != "none"]
    parts = [[_fmt(s.category_accuracy), _fmt(s.strategy_agreement), str(s.counts.get("fsc", 0)),
              str(s.fsc_no_evidence), str(len(s.fsc_judge_failures))]]
    return [
        (f"Per gold category: {s.name}", (["category", "n"] + [_arrow(m) for m in report.metrics], cat_rows)),
        (f"Category confusion (rows gold, columns predicted): {s.name}", (["gold \\ predicted"] + columns, conf_rows)),
        (f"CatAcc parts and FSc coverage: {s.name}", (
            ["category accuracy (pred = gold)", "strategy agreement (detected = pred)", "FSc judged",
             "FSc excluded (no gold evidence)", "FSc judge failures"], parts)),
    ]


def _problems_section(report) -> tuple[str, Table | str]:
    problems = []
    for s in report.systems:
        for label, ids in (("missing in predictions", s.missing_in_pred),
                           ("no reply", list(s.no_reply)), ("not in gold (not scored)", s.extra_in_pred),
                           ("duplicate ids (first kept)", s.duplicate_ids), ("bad rows", s.bad_rows),
                           ("FSc judge failed", s.fsc_judge_failures)):
            if ids:
                problems.append([s.name, label, str(len(ids)), _ids(ids)])
    if report.gold_problems:
        problems.append(["gold", "unusable rows", str(len(report.gold_problems)), _ids(report.gold_problems)])
    return ("Unscored and problem items",
            (["file", "what", "n", "ids"], problems) if problems else "None: every gold item was scored.")


def _tables(report) -> list[tuple[str, Table | str]]:
    """The report's sections: (title, table or paragraph), shared by Markdown and HTML."""
    sections: list[tuple[str, Table | str]] = [_coverage_section(report), _metrics_section(report)]
    if report.tests:
        sections.append(_tests_section(report))
    for s in report.systems:
        sections += _system_sections(report, s)
    judge_rows = [[j.role, j.name, j.version, j.details] for j in report.judges]
    sections.append(("Judges and versions", (["role", "name", "version", "details"], judge_rows)))
    sections.append(_problems_section(report))
    if report.notes:
        sections.append(("Notes", " ".join(report.notes)))
    return sections


def to_markdown(report, images: dict[str, str]) -> str:
    lines = ["# Counterspeech evaluation", "",
             f"Gold: `{report.gold_path}` ({report.gold_items} items) · created {report.created}", ""]
    for title, body in _tables(report):
        lines += [f"## {title}", ""]
        if isinstance(body, str):
            lines += [body, ""]
        else:
            header, rows = body
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "---|" * len(header))
            lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
            lines.append("")
        for image_title, file in images.items():
            if image_title == title:
                lines += [f"![{title}]({file})", ""]
    return "\n".join(lines)


def to_html(report, images: dict[str, str]) -> str:
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Counterspeech evaluation</title>",
        "<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;"
        "padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
        "img{max-width:100%}</style></head><body>",
        "<h1>Counterspeech evaluation</h1>",
        f"<p>Gold: <code>{esc(report.gold_path)}</code> ({report.gold_items} items) · created {esc(report.created)}</p>",
    ]
    for title, body in _tables(report):
        parts.append(f"<h2>{esc(title)}</h2>")
        if isinstance(body, str):
            parts.append(f"<p>{esc(body)}</p>")
        else:
            header, rows = body
            parts.append("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>")
            for row in rows:
                cells = []
                for cell in row:
                    bold = cell.startswith("**") and cell.endswith("**")
                    text = esc(cell.strip("*") if bold else cell)
                    cells.append(f"<td><b>{text}</b></td>" if bold else f"<td>{text}</td>")
                parts.append("<tr>" + "".join(cells) + "</tr>")
            parts.append("</table>")
        for image_title, file in images.items():
            if image_title == title:
                parts.append(f"<img src='{esc(file)}' alt='{esc(title)}'>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _plots(report, folder: Path) -> dict[str, str]:
    """PNG files keyed by the title of the section they illustrate."""
    matplotlib = require("matplotlib", "eval")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    images: dict[str, str] = {}
    for index, s in enumerate(report.systems):
        columns = list(CATEGORIES) + ["none"]
        matrix = [[s.confusion.get(g, {}).get(p, 0) for p in columns] for g in CATEGORIES]
        fig, ax = plt.subplots(figsize=(6.5, 5))
        ax.imshow(matrix, cmap="Blues")
        ax.set_xticks(range(len(columns)), columns, rotation=35, ha="right")
        ax.set_yticks(range(len(CATEGORIES)), CATEGORIES)
        ax.set_xlabel("predicted category")
        ax.set_ylabel("gold category")
        ax.set_title(f"Category confusion: {s.name}")
        peak = max((v for row in matrix for v in row), default=0)
        for r, row in enumerate(matrix):
            for c, value in enumerate(row):
                ax.text(c, r, str(value), ha="center", va="center",
                        color="white" if peak and value > peak / 2 else "black")
        fig.tight_layout()
        name = f"confusion_{index + 1}.png"
        fig.savefig(folder / name, dpi=110)
        plt.close(fig)
        images[f"Category confusion (rows gold, columns predicted): {s.name}"] = name
    metrics = [m for m in report.metrics if any(s.means.get(m.key) is not None for s in report.systems)]
    if metrics:
        fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(metrics) + 2), 4))
        width = 0.8 / len(report.systems)
        for k, s in enumerate(report.systems):
            values = [s.means.get(m.key) or 0.0 for m in metrics]
            ax.bar([i + k * width for i in range(len(metrics))], values, width, label=s.name)
        ax.set_xticks([i + width * (len(report.systems) - 1) / 2 for i in range(len(metrics))],
                      [_arrow(m) for m in metrics])
        ax.set_ylabel("mean score")
        ax.set_title("Metrics per system")
        ax.legend()
        fig.tight_layout()
        fig.savefig(folder / "metrics.png", dpi=110)
        plt.close(fig)
        images["Metrics (mean over scored items; ↑ higher is better, ↓ lower is better)"] = "metrics.png"
    return images


def write_report(report, folder: Path) -> list[str]:
    """Write report.md, report.html, report.json, items.jsonl and the PNGs; return the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    images = _plots(report, folder)
    (folder / "report.md").write_text(to_markdown(report, images), encoding="utf-8")
    (folder / "report.html").write_text(to_html(report, images), encoding="utf-8")
    with (folder / "items.jsonl").open("w", encoding="utf-8") as out:
        for s in report.systems:
            for item in s.items:
                out.write(json.dumps({"system": s.name, **item.model_dump()}, ensure_ascii=False) + "\n")
    files = [str(folder / n) for n in ("report.md", "report.html", "report.json", "items.jsonl")]
    files += [str(folder / f) for f in images.values()]
    (folder / "report.json").write_text(
        report.model_copy(update={"files": files}).model_dump_json(indent=2), encoding="utf-8")
    return files
