"""The trained SPAR span tagger alone (`spar-tagger`) on dev splits carved from the shared train files.

    OMP_NUM_THREADS=1 nice -n 19 PYTHONPATH=src .venv/bin/python benchmarks/spar_tagger.py \\
        --tagger en-main=/work/spar-tagger/en-main --tagger zh-main=/work/spar-tagger/zh-quad \\
        --tagger zh-quad=/work/spar-tagger/zh-quad --compare zh-main=/work/spar-tagger/zh-cnn

Each tagger folder (from `rebuttal spar train`) names its held-out dev ids (seed and sizes in its
config.json); those posts never reached training or epoch choice. Posts are parsed one at a
time through `TaggerParser` (what `rebuttal run --system spar-tagger` does), scored with the
project's scorers, and the scores are stored in each tagger's model card. No LLM is called.
Writes benchmarks/results/spar_tagger.md whole.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from provenance import header

from rebuttal.eval.spar_scoring import Predictions, format_report, score
from rebuttal.data.gold import load_gold
from rebuttal.spar.tagger import labels as L
from rebuttal.spar.tagger.card import record_scores
from rebuttal.spar.tagger.parser import PACKAGED, TaggerParser
from rebuttal.data.vocab import Track

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
GOLD = {"en": "tbo/train.jsonl", "zh": "state-toxicn/train.json"}
PAPERS = [
    "- SPAR-Hate paper (14B, prompted, its own test split): en-main avg 37.51, zh-main avg 32.82.",
    "- STATE-ToxiCN paper (its test split, hard/soft): mT5-base LoRA target 59.2/70.6, argument 28.6/67.0, "
    "pair 23.3/55.9, quad 16.6/38.6; GPT-4o 2-shot quad 9.0/23.3.",
]


def evaluate(folder: Path, track: str, data: Path) -> dict:
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    split = config["split"]
    posts = load_gold(data / GOLD[Track(track).lang])
    _, _, dev = L.carve(posts, split["seed"], split["dev"], split["val"])
    if [p.id for p in dev] != split["dev_ids"]:
        raise SystemExit(f"{folder}: its dev ids do not match the carve of {GOLD[Track(track).lang]}")
    parser = TaggerParser(folder)
    parser.parse(dev[0].text, lang=Track(track).lang, track=track)  # load outside the clock
    started = time.perf_counter()
    results = [parser.parse(p.text, lang=Track(track).lang, track=track, id=p.id) for p in dev]
    seconds = time.perf_counter() - started
    preds = Predictions(tuples={r.id: r.tuples for r in results if r.status != "error"},
                        error_ids=[r.id for r in results if r.status == "error"])
    report = score(preds, dev, track)
    return {"track": track, "folder": folder, "config": config, "posts": len(dev), "seconds": seconds,
            "report": report, "flagged": sum(r.status == "flagged" for r in results),
            "tuples_per_post": sum(len(r.tuples) for r in results) / len(results),
            "gold_tuples_per_post": sum(len(p.tuples) for p in dev) / len(dev)}


def describe(row: dict) -> str:
    c = row["config"]
    return (f"{c['kind']} ({c.get('encoder')}{', lexicon feature' if c.get('lexicon') else ''}), "
            f"trained on {c['split']['train']} posts, best epoch {c['training']['best_epoch']}/"
            f"{c['training']['epochs']}, {c['training']['train_seconds']:.0f} s on {c['training']['threads']} thread(s); "
            f"decoding chosen on validation {c.get('decode', {})}")


def markdown(rows: list[dict], data: Path) -> str:
    first = rows[0]["config"]["split"]
    lines = header(
        "SPAR span tagger (spar-tagger) benchmark",
        split=(f"dev splits carved from the shared train files ({', '.join(GOLD.values())} in {data}) with "
               f"seed {first['seed']}: {first['dev']} dev posts per language, disjoint from the tagger's "
               f"training and {first['val']}-post validation (epoch choice) posts"),
        model="none (no chat model, 0 LLM calls): trained span taggers",
        memory="en: packaged all-MiniLM-L6-v2 fine-tuned as a BIO tagger; zh: character models (the model "
               "column says which features; `hidden states` = a chat model's hidden states per character: its last "
               "layer, or layer N for `after layer N` and for a GGUF cut to its first N blocks such as "
               "`qwen-l14.gguf`; computed for every post at parse time, no text generated)")
    lines += ["## Summary (average F1 × 100 over the track's metrics, as `rebuttal eval spar`)", "",
              "| track | tagger | model | avg |", "|---|---|---|---|"]
    for r in rows:
        c = r["config"]
        lines.append(f"| {r['track']} | `{label(r['folder'])}` | {c['kind']}: {c.get('encoder')} | "
                     f"{r['report']['average'] * 100:.2f} |")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines += ["", "## Speed (one post at a time, as `rebuttal run --system spar-tagger`)", "",
              f"1 torch thread (taggers with hidden states also run the chat model's forward pass on 2 llama.cpp "
              f"threads), niced, while other jobs used the 2 cores (load average {load} at the end).", "",
              "| track | tagger | posts | s/post | posts/s | tuples/post (gold) | flagged |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['track']} | {label(r['folder'])} | {r['posts']} | {r['seconds'] / r['posts']:.4f} | "
                     f"{r['posts'] / r['seconds']:.1f} | {r['tuples_per_post']:.2f} ({r['gold_tuples_per_post']:.2f}) | "
                     f"{r['flagged']} |")
    lines += ["", "## Scores (F1 × 100; Chinese: hard / soft, the STATE notebook's matching; English: TBO fields)", ""]
    for r in rows:
        lines += [f"### {r['track']} · `{label(r['folder'])}`: {describe(r)}", "", format_report(r["report"])]
    lines += ["## Reference numbers (other splits, for orientation only)", "", *PAPERS, "",
              "spar-0shot, SPAR (LLM) and SPAR with the tagger as a fourth role on posts of these same dev "
              "splits: benchmarks/results/spar.md (`benchmarks/spar.py`, a 12-post sample per language: the "
              "1.5B model takes ~30 s a post).", ""]
    return "\n".join(lines)


def label(folder: Path) -> str:
    """A shipped tagger says so; others go by their folder's name."""
    return f"shipped {folder.name}" if folder.resolve().parent == PACKAGED.resolve() else folder.name


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tagger", action="append", default=[], help="TRACK=FOLDER (repeatable)")
    ap.add_argument("--compare", action="append", default=[], help="TRACK=FOLDER, extra taggers to score")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "spar_tagger.md")
    args = ap.parse_args()
    rows = []
    for spec in args.tagger + args.compare:
        track, folder = spec.split("=", 1)
        row = evaluate(Path(folder), Track(track).value, args.data)
        rows.append(row)
        print(f"{track} {folder}: avg {row['report']['average'] * 100:.2f}, "
              f"{row['seconds'] / row['posts']:.4f} s/post", flush=True)
        record_scores(folder, {f"{track} dev avg (F1×100)": f"{row['report']['average'] * 100:.2f}",
                               f"{track} dev report": format_report(row["report"]).replace("\n", " ")})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(rows, args.data), encoding="utf-8")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
