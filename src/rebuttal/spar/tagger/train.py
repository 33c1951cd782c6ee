"""Training: `train_tagger(data, track, out)` on a gold file as it is (STATE-ToxiCN JSON or TBO
JSONL), with a held-out dev split and a validation split carved from it with a fixed seed.

Defaults: English fine-tunes the packaged MiniLM (word pieces); Chinese trains a character
BiLSTM with character bigrams, jieba word positions and the slang lexicon as features, its
character vectors started from the chat model's token embeddings (`--vectors`, pretrained.py;
`encoder="cnn"` is the cheaper alternative). One thread by default: the machine is shared.
"""

from __future__ import annotations

import copy
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rebuttal.llm.embeddings import minilm_path
from rebuttal.llm.states import open_states
from rebuttal.optional import require
from rebuttal.data.gold import GoldPost, load_gold
from rebuttal.spar.lexicon import load_lexicon
from rebuttal.spar.tagger import labels as L
from rebuttal.spar.tagger.card import write_card
from rebuttal.spar.tagger.core import DECODE, CharFeaturizer, PieceFeaturizer, SpanTagger, collate
from rebuttal.data.vocab import NON_HATE, Track, normalize_group

SPLIT_SEED = 20261130
VAL_METRIC = "mean of hard and soft (target, argument, label) F1"
DEFAULTS = {"minilm": {"epochs": 4, "lr": 5e-5, "head_lr": 1e-3, "batch_size": 16},
            "char": {"epochs": 16, "lr": 2e-3, "head_lr": 2e-3, "batch_size": 32}}


@dataclass
class TrainSettings:
    track: str
    kind: str | None = None  # minilm | char (default: minilm for English, char for Chinese)
    encoder: str = "bilstm"  # char models: bilstm | cnn
    bigrams: bool = True  # char models: character-bigram embeddings
    words: bool = True  # char models: jieba word positions as a feature
    lexicon: Path | None = None  # STATE-ToxiCN lexicon JSON (Chinese lexicon feature)
    vectors: Path | None = None  # char models: a GGUF whose token embeddings start the char vectors
    context: str | None = None  # char models: an embedded model (or GGUF path) whose hidden states are a feature
    context_cache: Path | None = None  # where those states are kept between runs
    context_layers: int | None = None  # read the states after this many layers (default: the last)
    epochs: int | None = None
    lr: float | None = None
    batch_size: int | None = None
    dev_size: int = 300
    val_size: int = 250
    seed: int = SPLIT_SEED
    init_seed: int | None = None  # the weights' and batch order's seed (default: `seed`); ensemble members differ here
    threads: int = 1
    max_train: int | None = None  # a smaller training set, for quick tests
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.track = Track(self.track).value
        self.kind = self.kind or ("minilm" if Track(self.track).lang == "en" else "char")
        if self.kind not in DEFAULTS:
            raise ValueError(f"unknown tagger kind {self.kind!r}; choose minilm or char")
        defaults = DEFAULTS[self.kind]
        self.epochs = self.epochs or defaults["epochs"]
        self.lr = self.lr or defaults["lr"]
        self.batch_size = self.batch_size or defaults["batch_size"]
        self.init_seed = self.seed if self.init_seed is None else self.init_seed


def group_classes(posts: list[GoldPost], track: str, min_count: int = 10) -> list[str]:
    """STATE-ToxiCN group spellings seen at least `min_count` times (rarer ones train as others)."""
    if Track(track).lang != "zh":
        return []
    counts = Counter(normalize_group(t.group) for p in posts for t in p.tuples)
    return sorted({g for g, n in counts.items() if n >= min_count} | {NON_HATE, "others"})


def _batches(rows: list, size: int, rng: random.Random) -> list[list]:
    """Shuffled batches of similar lengths (less padding, same randomness every run)."""
    order = list(range(len(rows)))
    rng.shuffle(order)
    chunks = [sorted(order[i:i + size * 20], key=lambda k: len(rows[k][0]["ids"])) for i in range(0, len(order), size * 20)]
    batches = [[rows[k] for k in chunk[i:i + size]] for chunk in chunks for i in range(0, len(chunk), size)]
    rng.shuffle(batches)
    return batches


def build_tagger(s: TrainSettings, train: list[GoldPost], groups: list[str]) -> SpanTagger:
    from rebuttal.spar.tagger import models

    if s.kind == "minilm":
        base = str(minilm_path())
        model = models.MiniLMTagger(base, len(groups))
        model.encoder.embeddings.requires_grad_(False)  # stays the packaged encoder's: a 4x smaller saved tagger
        return SpanTagger("minilm", s.track, groups, model, PieceFeaturizer(base))
    terms = [e.term for e in load_lexicon(s.lexicon).entries] if s.lexicon else []
    featurizer = CharFeaturizer.build([p.text for p in train], terms, bigrams=s.bigrams, words=s.words)
    if s.context:
        featurizer.context_model, featurizer.context_layers = s.context, s.context_layers
        featurizer.context = open_states(s.context, s.context_cache, s.context_layers)
    config = models.CharConfig(vocab_size=len(featurizer.vocab) + 2, n_groups=len(groups), encoder=s.encoder,
                               bigram_size=len(featurizer.bigrams) + 2 if featurizer.bigrams else 0,
                               word_dim=16 if s.words else 0,
                               context_dim=featurizer.context.dim if featurizer.context else 0)
    model = models.CharTagger(config)
    meta = {}
    if s.vectors:
        from rebuttal.spar.tagger.pretrained import initialise

        meta["init"] = initialise(model, featurizer, s.vectors)
    return SpanTagger("char", s.track, groups, model, featurizer, meta)


def _optimizer(tagger: SpanTagger, s: TrainSettings, torch):
    head = list(tagger.model.heads.parameters())
    head_ids = {id(p) for p in head}
    body = [p for p in tagger.model.parameters() if id(p) not in head_ids and p.requires_grad]
    return torch.optim.AdamW([{"params": body, "lr": s.lr},
                              {"params": head, "lr": DEFAULTS[s.kind]["head_lr"]}], weight_decay=0.01)


def fit(tagger: SpanTagger, train: list[GoldPost], val: list[GoldPost], s: TrainSettings,
        log: Callable[[str], None]) -> dict:
    """Train for `s.epochs`, keep the epoch with the best validation score (`labels.val_score`)."""
    from rebuttal.spar.tagger.models import loss

    torch = tagger.torch
    torch.manual_seed(s.init_seed)
    rows = []
    for post in train:
        feats, units, positions = tagger.featurizer.features(post.text)
        rows.append((feats, positions, L.encode(post.text, units, post.tuples, tagger.groups)))
    optimizer = _optimizer(tagger, s, torch)
    rng = random.Random(s.init_seed)
    best, history, started = (-1.0, 0, None), [], time.perf_counter()
    for epoch in range(1, s.epochs + 1):
        tagger.model.train()
        total = 0.0
        for batch in _batches(rows, s.batch_size, rng):
            inputs, labels = collate(batch, torch)
            value = loss(tagger.forward(inputs), labels)
            optimizer.zero_grad()
            value.backward()
            torch.nn.utils.clip_grad_norm_(tagger.model.parameters(), 1.0)
            optimizer.step()
            total += value.item()
        f1 = L.val_score(tagger.predict([p.text for p in val]), [p.tuples for p in val])
        history.append({"epoch": epoch, "loss": round(total, 3), "val_f1": round(f1, 4)})
        log(f"epoch {epoch}/{s.epochs}: loss {total:.2f}, validation triple F1 (hard/soft mean) {f1:.4f}, "
            f"{time.perf_counter() - started:.0f}s")
        if f1 > best[0]:
            best = (f1, epoch, copy.deepcopy(tagger.model.state_dict()))
    tagger.model.load_state_dict(best[2])
    return {"history": history, "best_epoch": best[1], "val_f1": round(best[0], 4), "val_metric": VAL_METRIC,
            "train_seconds": round(time.perf_counter() - started, 1)}


def tune_decoding(tagger: SpanTagger, val: list[GoldPost], log: Callable[[str], None] = print) -> dict:
    """Grid-search the decoding options on the validation split (never the dev split)."""
    from itertools import product

    gold = [p.tuples for p in val]
    cached = tagger.probabilities([p.text for p in val])
    best = (-1.0, dict(DECODE))
    for gap, target_gap, min_chars, max_tuples in product((0, 1, 2, 3), (0, 1), (0, 2), (0, 2, 3)):
        tagger.meta["decode"] = {"merge_gap": gap, "target_gap": target_gap, "min_chars": min_chars,
                                 "max_tuples": max_tuples}
        value = L.val_score([tagger.decode(p.text, *c) for p, c in zip(val, cached)], gold)
        if value > best[0] + 1e-9:
            best = (value, dict(tagger.meta["decode"]))
    tagger.meta["decode"] = best[1]
    log(f"decoding chosen on validation: {best[1]} (hard/soft triple F1 mean {best[0]:.4f})")
    return {"decode": best[1], "val_decode_score": round(best[0], 4)}


def train_tagger(data: str | Path, out: str | Path, settings: TrainSettings,
                 log: Callable[[str], None] = print) -> SpanTagger:
    torch = require("torch", "memory")
    torch.set_num_threads(max(1, settings.threads))
    posts = load_gold(data)
    lang = Track(settings.track).lang
    if posts and posts[0].lang != lang:
        raise ValueError(f"track {settings.track} needs a {'TBO' if lang == 'en' else 'STATE-ToxiCN'} gold file")
    train, val, dev = L.carve(posts, settings.seed, settings.dev_size, settings.val_size)
    if settings.max_train:
        train = train[:settings.max_train]
    groups = group_classes(train, settings.track)
    torch.manual_seed(settings.init_seed)
    tagger = build_tagger(settings, train, groups)
    log(f"{tagger.name}: {len(train)} train / {len(val)} validation / {len(dev)} dev posts (seed {settings.seed})")
    report = fit(tagger, train, val, settings, log)
    report.update(tune_decoding(tagger, val, log))
    context = getattr(tagger.featurizer, "context", None)
    if context is not None and context.cache is not None:
        context.cache.flush()  # the states computed for this run, kept for the next
    tagger.meta = {"decode": report["decode"], "init": tagger.meta.get("init"),
        "data": Path(data).name, "split": {"seed": settings.seed, "train": len(train), "val": len(val),
                                            "dev": len(dev), "dev_ids": [p.id for p in dev],
                                            "val_ids": [p.id for p in val]},
        "encoder": (settings.encoder + (" + char bigrams" if settings.bigrams else "")
                    + (" + jieba word positions" if settings.words else "")
                    + (" (vectors from the chat model's token embeddings)" if settings.vectors else "")
                    + (f" + {settings.context} hidden states" if settings.context else "")
                    + (f" after layer {settings.context_layers}" if settings.context and settings.context_layers else "")
                    if settings.kind == "char" else "all-MiniLM-L6-v2, embedding tables frozen"),
        "lexicon": settings.lexicon.name if settings.lexicon else None,
        "training": {"epochs": settings.epochs, "lr": settings.lr, "batch_size": settings.batch_size,
                     "threads": settings.threads, "init_seed": settings.init_seed, **report}, **settings.extra,
    }
    tagger.save(out)
    write_card(out)
    log(f"saved to {out} (validation score {report['val_f1']}, best epoch {report['best_epoch']})")
    return tagger


def ensemble_taggers(folders: list[str | Path], data: str | Path, out: str | Path,
                     log: Callable[[str], None] = print) -> SpanTagger:
    """One tagger from several trained alike (same data, split, track and features; other
    `init_seed`s) that averages their heads; decoding is chosen again on the validation split."""
    from rebuttal.spar.tagger.core import load_tagger
    from rebuttal.spar.tagger.models import Ensemble

    if len(folders) < 2:
        raise ValueError("an ensemble needs at least two trained taggers")
    taggers = [load_tagger(folder) for folder in folders]
    if any(isinstance(t.model, Ensemble) for t in taggers):
        raise ValueError("join single taggers: one of these folders holds an ensemble already")
    first = taggers[0]
    alike = lambda t: (t.kind, t.track, t.groups, t.featurizer.state(), t.meta.get("split"))  # noqa: E731
    for folder, tagger in zip(folders[1:], taggers[1:]):
        if alike(tagger) != alike(first):
            raise ValueError(f"{folder} was not trained like {folders[0]}: data, split, track and features must match")
    split = first.meta.get("split") or {}
    _, val, _ = L.carve(load_gold(data), split.get("seed", SPLIT_SEED), split.get("dev", 0), split.get("val", 0))
    if [p.id for p in val] != split.get("val_ids"):
        raise ValueError(f"{data} is not the gold file these taggers were trained on (its validation split differs)")
    meta = {k: v for k, v in first.meta.items() if k != "scores"}  # the first member's scores are not the ensemble's
    tagger = SpanTagger(first.kind, first.track, first.groups, Ensemble([t.model for t in taggers]),
                        first.featurizer, meta)
    report = tune_decoding(tagger, val, log)
    tagger.meta.update(decode=report["decode"], ensemble={
        "val_score": report["val_decode_score"],
        "members": [_member_summary(folder, t, split.get("seed")) for folder, t in zip(folders, taggers)]})
    tagger.save(out)
    write_card(out)
    log(f"saved a {len(taggers)}-member ensemble to {out} (validation score {report['val_decode_score']})")
    return tagger


def _member_summary(folder: str | Path, tagger: SpanTagger, split_seed: int | None) -> dict:
    training = tagger.meta.get("training", {})
    return {"folder": Path(folder).name,
            **{k: training.get(k) for k in ("epochs", "best_epoch", "val_f1", "val_decode_score", "train_seconds")},
            # taggers trained before init_seed existed were seeded with the split seed
            "init_seed": training.get("init_seed", split_seed)}
