"""Train the memory encoder with FIRE's supervised contrastive loss.

Modes: `full` fine-tunes all of MiniLM (paper-faithful, writes a sentence-transformers
folder); `head` freezes MiniLM and trains a small residual projection head (`head.npz`, small
enough to ship). Both are seeded and deterministic on CPU and write `model_card.md` and
`training.json` (data, settings, steps, loss curve, dev accuracy per epoch).
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from rebuttal.memory.records import MemoryRecord, records_digest
from rebuttal.memory.encoders import BaseEncoder, Encoder, ProjectionHead
from rebuttal.memory.evaluate import EvalReport, evaluate_vectors
from rebuttal.memory.loss import supcon_loss
from rebuttal.memory.store import DEFAULT_K, DEFAULT_THRESHOLD, Memory
from rebuttal.types import HateType

Mode = Literal["full", "head"]


@dataclass
class TrainConfig:
    mode: Mode = "head"
    epochs: int | None = None  # None: 10 for the head, 1 for full fine-tuning
    batch_size: int = 64
    lr: float | None = None  # None: 1e-3 for the head, 2e-5 for full fine-tuning
    tau: float = 0.1
    seed: int = 13
    hidden: int = 256  # head only
    weight_decay: float = 0.01
    max_seq_length: int = 128  # full only; posts are short
    k: int = DEFAULT_K  # for the dev accuracy

    def resolved(self) -> TrainConfig:
        head = self.mode == "head"
        return TrainConfig(**{**asdict(self),
                              "epochs": self.epochs or (10 if head else 1),
                              "lr": self.lr or (1e-3 if head else 2e-5)})


@dataclass
class TrainReport:
    mode: str
    out: str
    data: dict
    config: dict
    steps: int = 0
    seconds_per_epoch: list[float] = field(default_factory=list)
    step_losses: list[float] = field(default_factory=list)
    epoch_losses: list[float] = field(default_factory=list)
    dev_accuracy: list[float] = field(default_factory=list)  # index 0 = before training
    dev_report: dict | None = None
    environment: dict = field(default_factory=dict)


def train(records: list[MemoryRecord], out: str | Path, config: TrainConfig | None = None,
          dev: list[MemoryRecord] | None = None, data_names: list[str] | None = None,
          progress: bool = True, base: Encoder | None = None) -> TrainReport:
    """Train an encoder on `records` and write it to `out`; dev accuracy is measured with
    memory = the training records and queries = `dev` (reported, never used for selection).
    `base` replaces frozen MiniLM in head mode (tests pass a cheap stand-in)."""
    import torch

    config = (config or TrainConfig()).resolved()
    labels = [r.category for r in records]
    if len(set(labels)) < 2:
        raise ValueError("SupCon needs at least two categories in the training data")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = TrainReport(
        mode=config.mode, out=str(out), config=asdict(config),
        data=_describe(records, dev, data_names),
        environment={"torch": torch.__version__, "python": platform.python_version(),
                     "threads": torch.get_num_threads()},
    )
    _seed(config.seed)
    if config.mode == "head":
        _train_head(records, dev, config, out, report, progress, base or BaseEncoder())
    elif config.mode == "full":
        _train_full(records, dev, config, out, report, progress)
    else:
        raise ValueError(f"unknown mode {config.mode!r}; use full or head")
    (out / "training.json").write_text(json.dumps(asdict(report), indent=2), encoding="utf-8")
    (out / "model_card.md").write_text(model_card(report), encoding="utf-8")
    return report


def _seed(seed: int) -> None:
    import random

    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


def _batches(n: int, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    order = rng.permutation(n)
    return [order[i:i + size] for i in range(0, n, size)]


def _label_codes(records: list[MemoryRecord]):
    import torch

    return torch.tensor([list(HateType).index(r.category) for r in records])


def _dev_accuracy(train_vectors: np.ndarray, records: list[MemoryRecord],
                  dev_vectors: np.ndarray, dev: list[MemoryRecord], k: int) -> EvalReport:
    memory = Memory(records, train_vectors, None, k=k, threshold=DEFAULT_THRESHOLD)
    return evaluate_vectors(memory, dev_vectors, [r.category for r in dev])


def _train_head(records, dev, config, out, report, progress, base: Encoder) -> None:
    import torch
    from tqdm.auto import tqdm

    x_train = base.encode([r.hate_speech for r in records])  # MiniLM is frozen: embed once
    x_dev = base.encode([r.hate_speech for r in dev]) if dev else None
    dim = x_train.shape[1]
    fc1, fc2 = torch.nn.Linear(dim, config.hidden), torch.nn.Linear(config.hidden, dim)
    torch.nn.init.zeros_(fc2.weight)  # start as the identity on MiniLM space
    torch.nn.init.zeros_(fc2.bias)
    params = [*fc1.parameters(), *fc2.parameters()]
    optimiser = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    inputs = torch.from_numpy(x_train)
    labels = _label_codes(records)
    rng = np.random.default_rng(config.seed)

    def export() -> ProjectionHead:
        return ProjectionHead(fc1.weight.detach().numpy().T, fc1.bias.detach().numpy(),
                              fc2.weight.detach().numpy().T, fc2.bias.detach().numpy(),
                              meta={"base": "all-MiniLM-L6-v2", "hidden": config.hidden,
                                    "data_sha256": report.data["sha256"]})

    def dev_eval() -> None:
        if x_dev is not None:
            head = export()
            result = _dev_accuracy(head.apply(x_train), records, head.apply(x_dev), dev, config.k)
            report.dev_accuracy.append(result.accuracy)
            report.dev_report = result.model_dump(mode="json")

    dev_eval()
    bar = tqdm(range(config.epochs), desc="head epochs", disable=not progress)
    for _ in bar:
        started = time.perf_counter()
        losses = []
        for batch in _batches(len(records), config.batch_size, rng):
            x = inputs[batch]
            z = x + fc2(torch.relu(fc1(x)))
            loss = supcon_loss(z, labels[batch], tau=config.tau)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.detach().item())
            report.step_losses.append(loss.detach().item())
            report.steps += 1
        report.seconds_per_epoch.append(time.perf_counter() - started)
        report.epoch_losses.append(float(np.mean(losses)))
        dev_eval()
        bar.set_postfix(loss=f"{report.epoch_losses[-1]:.4f}")
    export().save(out / "head.npz")


def _train_full(records, dev, config, out, report, progress) -> None:
    import torch
    from tqdm.auto import tqdm

    from rebuttal.llm.base import require
    from rebuttal.llm.embeddings import minilm_path

    st = require("sentence_transformers", "memory")
    model = st.SentenceTransformer(str(minilm_path()), device="cpu")
    model.max_seq_length = config.max_seq_length
    texts = [r.hate_speech for r in records]
    labels = _label_codes(records)
    rng = np.random.default_rng(config.seed)
    steps_total = config.epochs * -(-len(records) // config.batch_size)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    warmup = max(1, steps_total // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warmup, max(0.0, (steps_total - s) / (steps_total - warmup + 1))))

    # sentence-transformers >= 6 renamed tokenize() to preprocess()
    prepare = getattr(model, "preprocess", None) or model.tokenize

    def embed(batch_texts: list[str]) -> np.ndarray:
        model.eval()
        return model.encode(batch_texts, batch_size=64, convert_to_numpy=True,
                            normalize_embeddings=True, show_progress_bar=False).astype(np.float32)

    def dev_eval() -> None:
        if dev:
            result = _dev_accuracy(embed(texts), records, embed([r.hate_speech for r in dev]),
                                   dev, config.k)
            report.dev_accuracy.append(result.accuracy)
            report.dev_report = result.model_dump(mode="json")

    dev_eval()
    bar = tqdm(total=steps_total, desc="full fine-tuning", disable=not progress)
    for _ in range(config.epochs):
        started = time.perf_counter()
        losses = []
        model.train()
        for batch in _batches(len(records), config.batch_size, rng):
            features = prepare([texts[i] for i in batch])
            embeddings = model(features)["sentence_embedding"]
            loss = supcon_loss(embeddings, labels[batch], tau=config.tau)
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            losses.append(loss.detach().item())
            report.step_losses.append(loss.detach().item())
            report.steps += 1
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
        report.seconds_per_epoch.append(time.perf_counter() - started)
        report.epoch_losses.append(float(np.mean(losses)))
        dev_eval()
    bar.close()
    model.save(str(out))


def _describe(records: list[MemoryRecord], dev: list[MemoryRecord] | None,
              names: list[str] | None) -> dict:
    counts = {t.value: sum(r.category == t for r in records) for t in HateType}
    return {"files": names or [], "records": len(records), "categories": counts,
            "sha256": records_digest(records), "dev_records": len(dev) if dev else 0}


def model_card(report: TrainReport) -> str:
    c, d = report.config, report.data
    lines = [
        f"# Memory encoder: all-MiniLM-L6-v2, SupCon, {report.mode} mode", "",
        "Trained with FIRE's supervised contrastive loss (positives = same category, "
        "denominator over all other items in the batch, anchors without positives left out).",
        "",
        "## Data", "",
        f"- files: {', '.join(d['files']) or '(in memory)'}",
        f"- records: {d['records']} ({', '.join(f'{k} {v}' for k, v in d['categories'].items())})",
        f"- sha256 of (id, category, text): `{d['sha256'][:16]}…`",
        f"- dev records: {d['dev_records']}", "",
        "## Settings", "",
        f"- mode {report.mode}, epochs {c['epochs']}, batch {c['batch_size']}, lr {c['lr']}, "
        f"tau {c['tau']}, weight decay {c['weight_decay']}, seed {c['seed']}"
        + (f", head hidden {c['hidden']}" if report.mode == "head" else
           f", max_seq_length {c['max_seq_length']}"),
        f"- steps {report.steps}; seconds per epoch: "
        + ", ".join(f"{s:.1f}" for s in report.seconds_per_epoch),
        f"- environment: {report.environment}", "",
        "## Loss curve (mean SupCon loss per epoch)", "",
        "| epoch | loss | dev t̂ accuracy |", "|---:|---:|---:|",
    ]
    if report.dev_accuracy:
        lines.append(f"| 0 | - | {100 * report.dev_accuracy[0]:.1f}% |")
    for i, loss in enumerate(report.epoch_losses, 1):
        acc = f"{100 * report.dev_accuracy[i]:.1f}%" if i < len(report.dev_accuracy) else "-"
        lines.append(f"| {i} | {loss:.4f} | {acc} |")
    if report.dev_report:
        from rebuttal.memory.evaluate import EvalReport, format_report

        lines += ["", f"## Dev evaluation after training (memory = training data, k={c['k']})", "",
                  format_report(EvalReport.model_validate(report.dev_report))]
    else:
        lines += ["", "No dev set was given, so no dev accuracy."]
    return "\n".join(lines) + "\n"
