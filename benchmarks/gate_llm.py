"""The hate gate as FIRE uses it, the learned gate and the LLM's vote together, on the HateCheck
dev halves. Results: benchmarks/results/gate_llm.md (written whole).

    python benchmarks/gate_llm.py --per-functionality 5     # resumable: votes cached in runs/

FIRE answers a post when the gate's score reaches its threshold and, below the gate's `sure`
score, the LLM's vote does not say "not hateful". Only cases in that band need the LLM,
so the LLM runs on a fixed-seed sample of band cases per functionality, and each
functionality's share called hateful is estimated as

    P(score >= sure) + P(threshold <= score < sure) * P(LLM says hateful | sampled band cases)

with the gate's template-held-out scores (recorded in the shipped gate at training). Recall and
FPR then weight the functionalities by their case counts, as gate.md does. The same estimate
on real Chinese posts (held out from the gate, `benchmarks/gate_zh.py` writes them) ends the file.

Two votes are measured on the same cases: `analyst` (`FireSettings(gate_vote="analyst")`, the
default until session 5: the analyst answers category `none`) and `stance` (the default): one
narrow multiple-choice question on its own short system text (fire/prompts/stance.v1.txt, a one-letter answer) that
does not tell the model a category first. Its wording was chosen on 64 other band cases (a
separate seeded sample, not in the cases reported here); asked after FIRE's own system text and
post (to reuse the prefix) the model vetoed nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gate import DATA, SILVER_DEV, rates, recorded_held_out  # noqa: E402
from gate_zh import HELD_POSTS  # noqa: E402
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "gate_llm.md"
VOTES = ROOT / "runs" / "bench" / "gate-llm"
SEED = 11
VOTES_KINDS = ("analyst", "stance")


def functionality(row) -> str:
    return row.source.split(":", 1)[1]


def band_sample(rows, scores, gate, per_functionality: int) -> list[int]:
    """Up to `per_functionality` band cases of each functionality (fixed seed)."""
    by = defaultdict(list)
    for i, (row, score) in enumerate(zip(rows, scores)):
        if gate.threshold <= score < gate.sure:
            by[functionality(row)].append(i)
    rng = random.Random(SEED)
    return sorted(i for name in sorted(by) for i in rng.sample(by[name], min(per_functionality, len(by[name]))))


def analyst_vote(pipeline, text: str) -> dict:
    """The analyst (told the learned category) answers a category or `none`; an invalid answer
    falls back to the gate, so it counts as hateful."""
    from rebuttal.fire.analyst import Analyst, GateVote
    from rebuttal.types import Trace

    trace, settings = Trace(), pipeline.settings
    analyst = Analyst(pipeline.model, settings.policy, settings.analyst_max_tokens, GateVote.analyst)
    analysis = analyst.run(text, pipeline.assessor.assess(text, trace), trace)
    fallback = "analyst_fallback" in trace.flags
    return {"llm_hateful": fallback or any(v.source == "llm" for v in analysis.votes), "fallback": fallback}


def stance_vote(pipeline, text: str) -> dict:
    """FIRE's stance question (`GateVote.stance`, prompt stance.v1); an answer that is not one of
    the letters counts as no veto (a fallback)."""
    from rebuttal.fire.analyst import ask_stance
    from rebuttal.types import Trace

    trace = Trace()
    hateful = ask_stance(pipeline.model, text, trace)
    note = trace.steps[0].notes[0]
    return {"llm_hateful": hateful, "fallback": "not a choice" in note, "answer": note}


VOTERS = {"analyst": analyst_vote, "stance": stance_vote}


def cached_votes(pipeline, path: Path, cases: dict, kind: str, key_field: str) -> dict:
    """The `kind` vote on each case (key -> text), cached in `path` by `key_field` (an
    interrupted run resumes; a cached vote counts only for the same text)."""
    VOTES.mkdir(parents=True, exist_ok=True)
    cached = {v[key_field]: v for v in map(json.loads, path.read_text().splitlines())} if path.exists() else {}
    with path.open("a", encoding="utf-8") as out:
        for n, (key, text) in enumerate(cases.items(), 1):
            if key in cached and cached[key]["text"] == text:
                continue
            started = time.perf_counter()
            vote = {key_field: key, "text": text, **VOTERS[kind](pipeline, text),
                    "seconds": round(time.perf_counter() - started, 2)}
            cached[key] = vote
            out.write(json.dumps(vote, ensure_ascii=False) + "\n")
            out.flush()
            print(f"{path.stem} {n}/{len(cases)}: {'hateful' if vote['llm_hateful'] else 'none'} ({vote['seconds']}s)",
                  flush=True)
    return {key: cached[key] for key in cases}


def llm_votes(pipeline, rows, indices: list[int], lang: str, kind: str) -> dict[int, dict]:
    """One kind of vote on each sampled HateCheck case, by case index."""
    path = VOTES / (f"{lang}.jsonl" if kind == "analyst" else f"{lang}-{kind}.jsonl")
    return cached_votes(pipeline, path, {i: rows[i].text for i in indices}, kind, "index")


def silver_band(pipeline) -> list[dict]:
    """The hateful silver dev round-1 posts (the posts FIRE exists for) in the gate's band, with
    both votes: how many would lose their reply to each. Cached like the HateCheck votes."""
    from rebuttal.learned import datasets
    from rebuttal.types import Trace

    posts = [r.text for r in datasets.silver_posts([SILVER_DEV]) if r.hateful]
    band = []
    for text in posts:
        gate = pipeline.assessor.assess(text, Trace()).gate
        if gate is not None and gate.hateful and gate.score < gate.sure:
            band.append(text)
    out = []
    for kind in VOTES_KINDS:
        votes = cached_votes(pipeline, VOTES / f"silver-{kind}.jsonl", {t: t for t in band}, kind, "text")
        out.append({"posts": len(posts), "band": len(band), "kind": kind,
                    "vetoed": sum(not v["llm_hateful"] for v in votes.values())})
    return out


def chinese_posts(pipeline, per_class: int) -> list[str]:
    """The stance vote on real Chinese posts: the held-out fifth of STATE-ToxiCN posts scored by the
    shipped recipe retrained without them (gate_zh.py writes them with its cuts); up to `per_class`
    band posts of each gold class asked (fixed seed), estimated as for HateCheck."""
    lines = ["", "## Real Chinese posts: the held-out fifth of STATE-ToxiCN (Zhihu, Tieba)", ""]
    if not HELD_POSTS.exists():
        return lines + [f"Not measured: run benchmarks/gate_zh.py first (it writes {HELD_POSTS.relative_to(ROOT)})."]
    held = json.loads(HELD_POSTS.read_text(encoding="utf-8"))
    threshold, sure, rng = held["threshold"], held["sure"], random.Random(SEED)
    lines += [f"The shipped Chinese recipe (layer 14, with the rejections) trained again without a fifth of the "
              f"STATE-ToxiCN posts (seed {held['seed']}, benchmarks/gate_zh.py) scores them; its HateCheck folds give "
              f"threshold {threshold:.2f} and sure {sure:.2f}. The stance vote is asked on up to {per_class} band posts "
              "of each gold class; called hateful = P(score >= sure) + P(in band) x P(LLM says hateful | asked).", "",
              "| gold | posts | gate alone called hateful | at >= sure | in band | band posts asked | LLM says hateful "
              "| gate + LLM called hateful |", "|---|---|---|---|---|---|---|---|"]
    for hateful in (True, False):
        group = [p for p in held["posts"] if p["hateful"] == hateful]
        band = [p["text"] for p in group if threshold <= p["score"] < sure]
        above, in_band = np.mean([p["score"] >= sure for p in group]), len(band) / len(group)
        asked = rng.sample(band, min(per_class, len(band)))
        votes = cached_votes(pipeline, VOTES / "zh-posts-stance.jsonl", {t: t for t in asked}, "stance", "text")
        says = float(np.mean([v["llm_hateful"] for v in votes.values()])) if votes else 1.0
        lines.append(f"| {'hateful' if hateful else 'non-hateful'} | {len(group)} | {above + in_band:.3f} | {above:.3f} "
                     f"| {in_band:.3f} | {len(asked)} | {says:.2f} | {above + in_band * says:.3f} |")
    return lines


def combined(rows, scores, gate, votes: dict[int, dict]) -> dict[str, dict]:
    """Per functionality: gate-only share called hateful and the gate+LLM estimate."""
    by = defaultdict(list)
    for i, row in enumerate(rows):
        by[functionality(row)].append(i)
    out = {}
    for name, idx in sorted(by.items()):
        s = np.asarray(scores)[idx]
        above, band = float((s >= gate.sure).mean()), float(((s >= gate.threshold) & (s < gate.sure)).mean())
        sampled = [votes[i]["llm_hateful"] for i in idx if i in votes]
        p_llm = float(np.mean(sampled)) if sampled else 1.0  # no band case: nothing for the LLM to veto
        out[name] = {"gold": rows[idx[0]].hateful, "cases": len(idx), "gate": above + band,
                     "above": above, "band": band, "sampled": len(sampled), "llm_hateful": p_llm,
                     "combined": above + band * p_llm}
    return out


def weighted(table: dict[str, dict], key: str, hateful: bool) -> float:
    rows = [r for r in table.values() if r["gold"] == hateful]
    return sum(r[key] * r["cases"] for r in rows) / sum(r["cases"] for r in rows)


def report(per_functionality: int, results: dict[str, tuple], silver: list[dict]) -> list[str]:
    lines = header("Hate gate with the LLM's vote (FIRE's decision) on the HateCheck dev halves",
                   split="HateCheck dev half (English) and Multilingual HateCheck dev half (Mandarin); the gate's "
                   f"template-held-out scores; the LLM on up to {per_functionality} band cases per functionality "
                   f"(seed {SEED})", model="embedded qwen2.5-1.5b (llama.cpp): the stance question (stance.v1, FIRE's "
                   "default vote) and FIRE's analyst prompt (the vote before)",
                   memory="FIRE's shipped defaults (memory, learned category model, shipped gate.npz)")
    lines += ["Targets (issue 11): hateful recall >= 0.90 and non-hateful FPR <= 0.15 on both halves.", "",
              "Estimated per functionality as P(score >= sure) + P(in band) x P(LLM says hateful | sampled band "
              "cases), weighted by case counts. Gate alone = held-out scores at the threshold (as gate.md).", "",
              "| language | LLM vote | recall, gate alone | FPR, gate alone | recall, gate + LLM | FPR, gate + LLM "
              "| LLM calls | LLM fallbacks | s per LLM call (median) |", "|---|---|---|---|---|---|---|---|---|"]
    tables = ["", "## The posts FIRE exists for: hateful silver dev round-1 posts", "",
              "Shipped gate scores (the gate never trained on silver). A post in the band loses its reply "
              "when the vote says not hateful.", "",
              "| LLM vote | hateful posts | in the band | vetoed (no reply) |", "|---|---|---|---|",
              *[f"| {row['kind']} | {row['posts']} | {row['band']} | {row['vetoed']} |" for row in silver]]
    for (lang, kind), (rows, scores, gate, votes, table) in results.items():
        recall, fpr, _, _ = rates(rows, scores, gate.threshold)
        used = list(votes.values())
        seconds = float(np.median([v["seconds"] for v in used])) if used else float("nan")
        lines.append(f"| {lang} | {kind}{' (default)' if kind == 'stance' else ''} | {recall:.3f} | {fpr:.3f} "
                     f"| {weighted(table, 'combined', True):.3f} | {weighted(table, 'combined', False):.3f} "
                     f"| {len(used)} | {sum(v['fallback'] for v in used)} | {seconds:.1f} |")
        tables += ["", f"### {lang}, {kind} vote: per functionality (threshold {gate.threshold:.2f}, "
                   f"sure {gate.sure:.2f})", "",
                   "| functionality | gold | cases | gate alone | in band | band cases asked | LLM says hateful "
                   "| gate + LLM |", "|---|---|---|---|---|---|---|---|"]
        for name, r in table.items():
            asked = f"{r['llm_hateful']:.2f}" if r["sampled"] else "-"
            tables.append(f"| {name} | {'hateful' if r['gold'] else 'non-hateful'} | {r['cases']} | {r['gate']:.2f} "
                          f"| {r['band']:.2f} | {r['sampled']} | {asked} | {r['combined']:.2f} |")
    return lines + tables


def main() -> None:
    from rebuttal.fire.factory import default_pipeline
    from rebuttal.learned import HateGate, datasets
    from rebuttal.learned.gate import SHIPPED

    parser = argparse.ArgumentParser()
    parser.add_argument("--per-functionality", type=int, default=5)
    parser.add_argument("--votes", default=",".join(VOTES_KINDS), help="analyst and/or stance, comma-separated")
    parser.add_argument("--zh-posts-per-class", type=int, default=60,
                        help="band posts of each gold class asked in the real Chinese posts section")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"needs the shared data at {DATA}")
    shipped, pipeline, results = HateGate.load(SHIPPED), default_pipeline(), {}
    for lang in ("en", "zh"):
        rows = datasets.hatecheck(DATA, lang)
        scores, gate = recorded_held_out(shipped, lang, rows, "shipped"), shipped.gates[lang]
        sample = band_sample(rows, scores, gate, args.per_functionality)
        for kind in args.votes.split(","):
            votes = llm_votes(pipeline, rows, sample, lang, kind)
            results[(lang, kind)] = (rows, scores, gate, votes, combined(rows, scores, gate, votes))
    lines = report(args.per_functionality, results, silver_band(pipeline))
    lines += chinese_posts(pipeline, args.zh_posts_per_class)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
