"""SPAR-Hate, the 0-shot baseline and the trained span tagger on the same posts: speed, LLM
calls per post, scores.

    PYTHONPATH=src .venv/bin/python benchmarks/spar.py --n 30 --taggers /work/spar-tagger

Samples --n posts per language (seeded) from the tagger's held-out dev split: the same carve of
the shared train files (TBO for English, STATE-ToxiCN for Chinese) that `rebuttal spar train`
uses, so no post reached the tagger's training. Parses them with each system on one loaded
model and writes benchmarks/results/spar.md (rewritten after every language × system, so a
long run that is stopped still leaves its finished rows).
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from provenance import header

from rebuttal.data.gold import load_state_toxicn, load_tbo
from rebuttal.spar.tagger.labels import carve
from rebuttal.spar.tagger.parser import TaggerParser
from rebuttal.spar.tagger.train import TrainSettings
from rebuttal.eval.spar_scoring import Predictions, score
from rebuttal.llm import load_model
from rebuttal.spar import SparParser, SparSettings

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def sample(lang: str, n: int, seed: int, data: Path):
    """n posts of the tagger's dev split (seeded), in the carve `rebuttal spar train` makes."""
    posts = load_tbo(data / "tbo" / "train.jsonl") if lang == "en" else load_state_toxicn(data / "state-toxicn" / "train.json")
    defaults = TrainSettings(track="en-main" if lang == "en" else "zh-main")
    _, _, dev = carve(posts, defaults.seed, defaults.dev_size, defaults.val_size)
    return random.Random(seed).sample(dev, n)


def run(parser: SparParser, posts, lang: str, track: str) -> dict:
    started = time.perf_counter()
    results = []
    for post in posts:
        results.append(parser.parse(post.text, lang=lang, track=track, id=post.id))
        print(f"  {parser.system} {lang} {post.id}: {results[-1].llm_calls} calls, {len(results[-1].tuples)} tuples, "
              f"{time.perf_counter() - started:.0f}s", flush=True)
    elapsed = time.perf_counter() - started
    preds = Predictions(tuples={r.id: r.tuples for r in results if r.status != "error"},
                        error_ids=[r.id for r in results if r.status == "error"])
    usage = [r.trace.usage for r in results]
    return {
        "system": parser.system, "lang": lang, "track": track, "posts": len(posts),
        "seconds": elapsed, "posts_per_min": 60 * len(posts) / elapsed if elapsed else 0.0,
        "calls_per_post": sum(r.llm_calls for r in results) / len(results),
        "prompt_tokens_per_post": sum(u.prompt_tokens for u in usage) / len(results),
        "completion_tokens_per_post": sum(u.completion_tokens for u in usage) / len(results),
        "status": {s: sum(r.status == s for r in results) for s in ("ok", "flagged", "error")},
        "tuples_per_post": sum(len(r.tuples) for r in results) / len(results),
        "score": score(preds, posts, track),
    }


def markdown(rows: list[dict], args, model_name: str) -> str:
    lines = header(
        "SPAR-Hate benchmark",
        split=(f"{args.n} posts per language sampled with seed {args.seed} from the span tagger's held-out dev "
               "split (carved from the shared TBO / STATE-ToxiCN train files, seed as in `rebuttal spar train`); "
               "no choice was made on these posts"),
        model=f"{model_name} (embedded, llama.cpp) for spar and spar-0shot; spar-tagger calls no LLM",
        memory=f"Chinese slang lexicon from the shared data; taggers from {args.taggers or '(none)'}")
    lines += [
        "## Speed", "",
        "| system | lang | posts | posts/min | LLM calls/post | prompt tok/post | completion tok/post | ok/flagged/error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = r["status"]
        lines.append(f"| {r['system']} | {r['lang']} | {r['posts']} | {r['posts_per_min']:.2f} | {r['calls_per_post']:.2f} | "
                     f"{r['prompt_tokens_per_post']:.0f} | {r['completion_tokens_per_post']:.0f} | "
                     f"{s['ok']}/{s['flagged']}/{s['error']} |")
    lines += ["", "## Scores (F1 × 100; Chinese: hard / soft)", ""]
    for r in rows:
        sc = r["score"]
        m = sc["metrics"]
        if r["track"] == "en-main":
            cells = " | ".join(f"{k} {m[k]['f1'] * 100:.2f}" for k in m)
        else:
            cells = " | ".join(f"{k} {m[k]['hard']['f1'] * 100:.2f} / {m[k]['soft']['f1'] * 100:.2f}" for k in m)
        lines.append(f"- **{r['system']} {r['track']}**: {cells} | avg {sc['average'] * 100:.2f}")
    lines += ["", f"With n={args.n} these scores are noisy; they show the pipeline end to end on a 1.5B model, "
              "not the paper's 14B numbers.", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--seed", type=int, default=20260415)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--langs", default="en,zh")
    ap.add_argument("--systems", default="spar-tagger,spar-0shot,spar,spar+tagger")
    ap.add_argument("--taggers", type=Path, help="folder with en-main/ and zh-main/ taggers (rebuttal spar train)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "spar.md")
    args = ap.parse_args()
    model = load_model()
    lexicon = args.data / "state-toxicn" / "lexicon.json"  # read in place, never copied
    rows = []
    for lang in args.langs.split(","):
        posts = sample(lang, args.n, args.seed, args.data)
        track = "en-main" if lang == "en" else "zh-main"
        for system in args.systems.split(","):
            if system == "spar-tagger":
                parser = TaggerParser(args.taggers)
            else:
                parser = SparParser(model, SparSettings(zero_shot=system == "spar-0shot",
                                                        lexicon_path=lexicon if lexicon.exists() and lang == "zh" else None),
                                    tagger=TaggerParser(args.taggers) if system == "spar+tagger" else None)
            rows.append(run(parser, posts, lang, track))
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(markdown(rows, args, model.name), encoding="utf-8")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
