"""`rebuttal learned ...`: train the category model, the hate gate and the draft score (rebuttal.learned)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Small trained models: FIRE's category model, hate gate and draft score.", no_args_is_help=True)


def echo_cuts(gate, out: Path) -> None:
    """What train-gate and calibrate-gate print: each language's (threshold, sure)."""
    cuts = {lang: (round(g.threshold, 2), g.sure) for lang, g in gate.gates.items()}
    typer.echo(f"gate (threshold, sure) {cuts} -> {out}")


@app.command("train-category")
def train_category_command(
    data: Annotated[list[str], typer.Option("--data", help="silver/FactualCS record file(s) to train on")],
    out: Annotated[Path, typer.Option("--out", help="folder for category.npz and its model card")],
    dev: Annotated[list[str] | None, typer.Option("--dev", help="dev file(s), scored for the model card")] = None,
    c: Annotated[float, typer.Option(help="inverse L2 strength")] = 4.0,
    states: Annotated[bool, typer.Option(help="add a part reading the embedded chat model's states (needs the "
                                              "embedded qwen2.5-1.5b; ~0.5 s a record once, cached)")] = True,
) -> None:
    """Train FIRE's category model; REBUTTAL_CATEGORY_MODEL=OUT/category.npz makes FIRE use it."""
    from rebuttal.learned.gate import MODEL_MISSING
    from rebuttal.learned.train_category import train_category
    from rebuttal.memory.records import DatasetError

    try:
        model = train_category(data, out, c=c, dev=dev, states=states)
    except (DatasetError, *MODEL_MISSING) as exc:
        hint = " (or train without the chat model's states: --no-states)" if states else ""
        typer.secho(f"error: {exc}{hint}", fg="red", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"out-of-fold accuracy {model.meta['out_of_fold_accuracy']:.3f} on {model.meta['records']} records"
               + (f"; dev {model.meta['dev']['accuracy']:.3f}" if "dev" in model.meta else "") + f" -> {out}")


@app.command("train-gate")
def train_gate_command(
    data_root: Annotated[Path, typer.Option("--data-root", help="folder laid out as ../shared/data")],
    out: Annotated[Path, typer.Option("--out", help="folder for gate.npz and its model card")],
    recall: Annotated[float, typer.Option(help="hateful recall the threshold keeps on HateCheck dev folds")] = 0.9,
    max_fpr: Annotated[float, typer.Option(help="share of non-hateful HateCheck dev cases allowed at or above "
                                                "`sure`, where the LLM can no longer veto a reply")] = 0.15,
    english: Annotated[str, typer.Option(help="English gate: `blend` (the embedded chat model's layer-14 states "
                                              "blended with MiniLM + word n-grams on the whole corpus, the shipped "
                                              "kind; ~45 min to read the states; the linear half is the fallback), "
                                              "`states`, `linear` (MiniLM + word n-grams, ~10 min) or `head` (token "
                                              "head over MiniLM, ~25 min)")] = "blend",
    chinese: Annotated[str, typer.Option(help="Chinese gate: `states` (the embedded chat model's layer-14 states, "
                                              "the shipped kind; ~15 min to read them; a linear fallback is kept) "
                                              "or `linear` (character n-grams, ~1 min)")] = "states",
    keep: Annotated[list[str], typer.Option(help="a language (en, zh) to copy from --keep-from instead of "
                                                 "training it; repeatable")] = [],  # noqa: B006 - typer reads it
    keep_from: Annotated[Path | None, typer.Option(help="the gate.npz --keep copies from (default: the shipped "
                                                        "gate)")] = None,
) -> None:
    """Train the hate gate (English and Chinese); REBUTTAL_GATE_MODEL=OUT/gate.npz makes FIRE use it."""
    from rebuttal.learned.gate import HateGate
    from rebuttal.learned.train import train_gate

    try:
        if english not in ("blend", "head", "linear", "states"):
            raise typer.BadParameter("--english must be blend, head, linear or states")
        if chinese not in ("states", "linear"):
            raise typer.BadParameter("--chinese must be states or linear")
        if not set(keep) <= {"en", "zh"}:
            raise typer.BadParameter("--keep takes en or zh")
        kept = (HateGate.load(keep_from) if keep_from else HateGate.load()).only(keep) if keep else None
        gate = train_gate(data_root, out, recall_target=recall, max_fpr=max_fpr, english=english, chinese=chinese,
                          keep=kept)
    except FileNotFoundError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from None
    echo_cuts(gate, out)


@app.command("calibrate-gate")
def calibrate_gate_command(
    gate: Annotated[Path, typer.Option("--gate", help="a gate.npz from `train-gate` (it records held-out scores)")],
    data_root: Annotated[Path, typer.Option("--data-root", help="folder laid out as ../shared/data (HateCheck labels)")],
    out: Annotated[Path, typer.Option("--out", help="folder for the recalibrated gate.npz and its model card")],
    recall: Annotated[float, typer.Option(help="hateful recall the threshold keeps on HateCheck dev folds")] = 0.9,
    max_fpr: Annotated[float, typer.Option(help="non-hateful share allowed at or above `sure`")] = 0.15,
    fpr_budget: Annotated[float | None, typer.Option(help="the threshold is lowered while held-out non-hateful "
                                                          "cases stay within this share (default 0.125)")] = None,
    threshold: Annotated[list[str] | None, typer.Option(
        "--threshold", help="LANG=CUT: set a language's threshold by hand, e.g. zh=0.70 for real Chinese posts "
                            "(benchmarks/results/gate_zh.md)")] = None,
) -> None:
    """New cuts for a trained gate from its recorded held-out scores (seconds; no retraining)."""
    from rebuttal.learned.calibration import FPR_BUDGET
    from rebuttal.learned.train import recalibrate_gate

    try:
        by_hand = dict(_threshold(text) for text in threshold or [])
        calibrated = recalibrate_gate(gate, data_root, out, recall_target=recall, max_fpr=max_fpr,
                                      fpr_budget=FPR_BUDGET if fpr_budget is None else fpr_budget, thresholds=by_hand)
    except (FileNotFoundError, KeyError, ValueError) as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from None
    echo_cuts(calibrated, out)


def _threshold(text: str) -> tuple[str, float]:
    """"zh=0.70" -> ("zh", 0.7)."""
    lang, sep, value = text.partition("=")
    try:
        cut = float(value)
    except ValueError:
        cut = -1.0
    if not sep or not 0.0 < cut < 1.0:
        raise ValueError(f"--threshold takes LANG=CUT with a cut between 0 and 1 (e.g. zh=0.70), not {text!r}")
    return lang.strip(), cut


@app.command("train-draft-score")
def train_draft_score_command(
    replies: Annotated[list[Path], typer.Option("--replies", help="graded replies' texts, repeatable "
                                                                  "(benchmarks/grades/fire-*-replies.jsonl of dev posts)")],
    grades: Annotated[Path, typer.Option("--grades", help="their blind grades "
                                                          "(benchmarks/grades/fire-dev-independent.jsonl)")],
    out: Annotated[Path, typer.Option("--out", help="folder for draft_score.npz and its model card")],
    data_root: Annotated[Path | None, typer.Option("--data-root", help="folder holding factualcs-silver/: the "
                                                   "posts, so the score reads each reply with its post (shipped)")] = None,
    keep: Annotated[float | None, typer.Option(help="share of usable replies the cut passes out of fold "
                                                    "(default: the one chosen on dev, see the model card)")] = None,
    no_states: Annotated[bool, typer.Option("--no-states", help="only the MiniLM head (no embedded chat "
                                                                   "model needed; weaker, see the model card)")] = False,
) -> None:
    """Train FIRE's draft score; REBUTTAL_DRAFT_SCORE_MODEL=OUT/draft_score.npz makes FIRE use it."""
    from rebuttal.learned.draft_score import STATES
    from rebuttal.learned.gate import MODEL_MISSING
    from rebuttal.learned.train_draft import silver_posts, train_draft_score

    try:
        posts = silver_posts(data_root) if data_root else None
        score = train_draft_score(replies, grades, out, posts=posts, keep=keep, states=None if no_states else STATES)
    except (FileNotFoundError, ValueError, *MODEL_MISSING) as exc:
        hint = "" if isinstance(exc, (FileNotFoundError, ValueError)) else " (or train with --no-states)"
        typer.secho(f"error: {exc}{hint}", fg="red", err=True)
        raise typer.Exit(2) from None
    meta = score.head.meta
    typer.echo(f"reads {meta['reads']}: out-of-fold AUC {meta['out_of_fold_auc']} on {meta['replies']} "
               f"replies; cut {meta['threshold']} passes {meta['out_of_fold_passed_usable']:.0%} of usable, flags "
               f"{meta['out_of_fold_flagged_not_usable']:.0%} of the rest -> {out}")
