"""`SpanTagger`: a trained model with its featurizer; predicts SparTuples, saves and loads.

Saved folder: `config.json` (kind, track, groups, vocabulary, lexicon terms as hashes, split),
`weights.pt` (state dict in half precision), `MODEL_CARD.md`. MiniLM taggers start from the
packaged encoder (`rebuttal.llm.embeddings.minilm_path()`) and train all but its embedding
tables, so the folder holds only the weights training changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import partial
from pathlib import Path

from rebuttal.llm.embeddings import minilm_path
from rebuttal.llm.states import open_states
from rebuttal.optional import require
from rebuttal.spar.tagger import labels as L
from rebuttal.types import SparTuple

MAX_PIECES = 256
MAX_CHARS = 512
CONFIG, WEIGHTS = "config.json", "weights.pt"
FROZEN = "encoder.embeddings."  # MiniLM's embedding tables: not trained, loaded from the packaged encoder
# Decoding options (chosen on the validation split by `train.tune_decoding`, kept in config.json).
DECODE = {"merge_gap": 0, "target_gap": 0, "min_chars": 0, "max_tuples": 0}


def term_hash(term: str) -> str:
    return hashlib.blake2b(term.encode("utf-8"), digest_size=8).hexdigest()


def _jieba():
    jieba = require("jieba", "train")
    jieba.setLogLevel(60)  # no "Building prefix dict" lines on stderr
    return jieba


def word_positions(text: str) -> list[int]:
    """jieba's word segmentation as one id per character: 1 a one-character word, 2 a word's first
    character, 3 inside, 4 last. Character models see word boundaries they cannot learn from
    6k posts; jieba's dictionary ships inside its wheel."""
    out: list[int] = []
    for word in _jieba().cut(text):
        out += [1] if len(word) == 1 else [2] + [3] * (len(word) - 2) + [4]
    return (out + [1] * len(text))[:len(text)]


class CharFeaturizer:
    """One unit per character; ids from the training vocabulary (1 = unknown, 0 = padding), the
    lexicon feature (0 outside a slang term, 1 its first character, 2 inside) and optionally
    character bigrams, jieba word positions and the chat model's contextual states
    (`context`, a ContextualStates; `context_model` names its GGUF in config.json)."""

    def __init__(self, vocab: dict[str, int], terms: list[str], bigrams: dict[str, int] | None = None,
                 words: bool = False, context=None, context_model: str | None = None,
                 context_layers: int | None = None, term_hashes: dict[str, list[str]] | None = None):
        self.vocab = vocab
        # Terms are kept as hashes per length: a saved tagger must not carry the licensed lexicon's text.
        self.term_hashes = {int(n): set(h) for n, h in (term_hashes or {}).items()}
        for term in set(terms):
            self.term_hashes.setdefault(len(term), set()).add(term_hash(term))
        self.bigrams = bigrams or {}  # character pairs (seen twice in training) → id; empty = off
        self.words = words
        self.context, self.context_model, self.context_layers = context, context_model, context_layers

    @classmethod
    def build(cls, texts: list[str], terms: list[str], bigrams: bool = True, words: bool = False) -> CharFeaturizer:
        counts: dict[str, int] = {}
        pairs: dict[str, int] = {}
        for text in texts:
            for i, ch in enumerate(text):
                counts[ch] = counts.get(ch, 0) + 1
                pairs[text[i:i + 2]] = pairs.get(text[i:i + 2], 0) + 1
        chars = sorted(counts)
        kept = sorted(b for b, n in pairs.items() if n >= 2 and len(b) == 2) if bigrams else []
        return cls({ch: i + 2 for i, ch in enumerate(chars)}, terms, {b: i + 2 for i, b in enumerate(kept)}, words)

    def features(self, text: str) -> tuple[dict[str, list[int]], list[L.Unit], list[int]]:
        text = text[:MAX_CHARS]
        lex = [0] * len(text)
        for size in sorted(self.term_hashes, reverse=True):  # longest terms first, no overlaps
            hashes = self.term_hashes[size]
            for start in range(len(text) - size + 1):
                if not any(lex[start:start + size]) and term_hash(text[start:start + size]) in hashes:
                    lex[start] = 1
                    lex[start + 1:start + size] = [2] * (size - 1)
        feats = {"ids": [self.vocab.get(ch, 1) for ch in text], "lex": lex}
        if self.bigrams:  # the pair starting here and the pair ending here
            feats["bi_next"] = [self.bigrams.get(text[i:i + 2], 1) for i in range(len(text))]
            feats["bi_prev"] = [self.bigrams.get(text[i - 1:i + 1], 1) if i else 1 for i in range(len(text))]
        if self.words:
            feats["words"] = word_positions(text)
        if self.context is not None:
            feats["ctx"] = self.context.char_states(text)
        return feats, [(i, i + 1) for i in range(len(text))], list(range(len(text)))

    def state(self) -> dict:
        return {"vocab": self.vocab, "term_hashes": {n: sorted(h) for n, h in self.term_hashes.items()},
                "bigrams": self.bigrams, "words": self.words,
                "context_model": self.context_model, "context_layers": self.context_layers}


class PieceFeaturizer:
    """MiniLM word pieces with their character offsets; [CLS]/[SEP] are inputs, not units."""

    def __init__(self, model_dir: str):
        transformers = require("transformers", "memory")
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)

    def features(self, text: str) -> tuple[dict[str, list[int]], list[L.Unit], list[int]]:
        enc = self.tokenizer(text, return_offsets_mapping=True, truncation=True, max_length=MAX_PIECES)
        units, positions = [], []
        for pos, (s, e) in enumerate(enc["offset_mapping"]):
            if e > s:
                units.append((s, e))
                positions.append(pos)
        return {"ids": enc["input_ids"]}, units, positions

    def state(self) -> dict:
        return {}


def collate(rows: list[tuple[dict, list[int], L.Encoded | None]], torch) -> tuple[dict, dict | None]:
    """Pad a batch: inputs, mask and (when encoded gold is given) per-head labels."""
    width = max(len(r[0]["ids"]) for r in rows)
    inputs = {key: torch.zeros(len(rows), width, *value.shape[1:]) if key == "ctx"  # float vectors
              else torch.zeros(len(rows), width, dtype=torch.long) for key, value in rows[0][0].items()}
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    labels = {name: torch.full((len(rows), width), L.IGNORE, dtype=torch.long) for name in L.Encoded.__annotations__}
    for b, (feats, positions, enc) in enumerate(rows):
        for key, values in feats.items():
            inputs[key][b, :len(values)] = torch.as_tensor(values)
        mask[b, :len(feats["ids"])] = 1
        if enc is not None and positions:
            index = torch.tensor(positions)
            for name in labels:
                labels[name][b, index] = torch.tensor(getattr(enc, name))
    inputs["mask"] = mask
    return inputs, labels if rows[0][2] is not None else None


class SpanTagger:
    def __init__(self, kind: str, track: str, groups: list[str], model, featurizer, meta: dict | None = None):
        self.kind, self.track, self.groups = kind, track, groups
        self.model, self.featurizer, self.meta = model, featurizer, meta or {}
        self.torch = require("torch", "memory")

    @property
    def name(self) -> str:
        return f"spar-tagger-{self.kind}-{self.track}"

    def forward(self, inputs: dict):
        if self.kind == "minilm":
            return self.model(inputs["ids"], inputs["mask"])
        bigrams = (inputs["bi_next"], inputs["bi_prev"]) if "bi_next" in inputs else None
        return self.model(inputs["ids"], inputs["lex"], inputs["mask"], bigrams, inputs.get("words"), inputs.get("ctx"))

    def predict(self, texts: list[str], batch_size: int = 32) -> list[list[SparTuple]]:
        return [self.decode(text, units, probs) for text, (units, probs) in zip(texts, self.probabilities(texts, batch_size))]

    def probabilities(self, texts: list[str], batch_size: int = 32) -> list[tuple[list[L.Unit], dict]]:
        """Per post: its units and each head's per-unit probabilities (lists)."""
        self.model.eval()
        out = []
        with self.torch.no_grad():
            for i in range(0, len(texts), batch_size):
                chunk = texts[i:i + batch_size]
                feats = [self.featurizer.features(t) for t in chunk]
                inputs, _ = collate([(f, p, None) for f, _, p in feats], self.torch)
                probs = {k: v.softmax(-1) for k, v in self.forward(inputs).items()}
                for b, (_, units, positions) in enumerate(feats):
                    out.append((units, {k: v[b, positions].tolist() for k, v in probs.items()}))
        return out

    def decode(self, text: str, units: list[L.Unit], p: dict) -> list[SparTuple]:
        if not units:
            return []
        tags = {name: [max(range(3), key=lambda k: row[k]) for row in p[name]] for name in ("target", "argument")}
        decode = {**DECODE, **self.meta.get("decode", {})}
        arg_spans = L.merge_close(L.decode_spans(tags["argument"]), decode["merge_gap"])
        if len(arg_spans) > 1:  # fragments shorter than min_chars go, unless nothing else is left
            long = [(a, b) for a, b in arg_spans if units[b - 1][1] - units[a][0] >= decode["min_chars"]]
            arg_spans = long or arg_spans
        if decode["max_tuples"] and len(arg_spans) > decode["max_tuples"]:
            sure = lambda span: sum(1 - p["argument"][i][L.O] for i in range(*span)) / (span[1] - span[0])  # noqa: E731
            arg_spans = sorted(sorted(arg_spans, key=sure, reverse=True)[:decode["max_tuples"]])
        if not arg_spans:  # every gold post has a tuple: take the most likely argument start
            first = max(range(len(units)), key=lambda i: p["argument"][i][L.B])
            last = first + 1
            while last < len(units) and p["argument"][last][L.I] > p["argument"][last][L.O]:
                last += 1
            arg_spans = [(first, last)]
        targets = [s for a, b in L.merge_close(L.decode_spans(tags["target"]), decode["target_gap"])
                   if (s := L.char_span(text, units, a, b))]
        arguments = []
        for a, b in arg_spans:
            span = L.char_span(text, units, a, b)
            if span is None:
                continue
            mean = lambda name: [sum(col) / (b - a) for col in zip(*p[name][a:b])]  # noqa: E731
            arguments.append(L.ArgumentSpan(span[0], span[1], harm=mean("harm")[1], null=mean("null")[1],
                                            group=mean("group") if self.groups else None))
        return L.pair(text, targets, arguments, self.groups or None)

    def save(self, folder: str | Path, extra: dict | None = None) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        config = {"kind": self.kind, "track": self.track, "groups": self.groups,
                  "featurizer": self.featurizer.state(), **self.meta, **(extra or {})}
        if self.kind != "minilm":
            config["char_config"] = vars(self.model.cfg)
        from rebuttal.spar.tagger.models import Ensemble

        if isinstance(self.model, Ensemble):
            config["members"] = len(self.model.members)
        (folder / CONFIG).write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")
        # Half precision halves the file; frozen parameters (MiniLM's embeddings) are the packaged
        # encoder's own and load from it, so they are not saved.
        frozen = {name for name, p in self.model.named_parameters() if not p.requires_grad}
        state = {k: v.half() if v.is_floating_point() else v for k, v in self.model.state_dict().items()
                 if k not in frozen}
        self.torch.save(state, folder / WEIGHTS)
        return folder


def load_tagger(folder: str | Path) -> SpanTagger:
    """A tagger saved by `rebuttal spar train`."""
    folder = Path(folder)
    if not (folder / CONFIG).exists() or not (folder / WEIGHTS).exists():
        raise FileNotFoundError(f"no trained SPAR tagger in {folder} (train one with `rebuttal spar train`)")
    torch = require("torch", "memory")
    from rebuttal.spar.tagger import models

    config = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
    groups = config["groups"]
    if config["kind"] == "minilm":
        base = str(minilm_path())
        make = partial(models.MiniLMTagger, base, len(groups))
        featurizer = PieceFeaturizer(base)
    else:
        make = partial(models.CharTagger, models.CharConfig(**config["char_config"]))
        state = config["featurizer"]
        featurizer = CharFeaturizer(state["vocab"], state.get("terms", []), state.get("bigrams"),
                                    state.get("words", False), context_model=state.get("context_model"),
                                    context_layers=state.get("context_layers"), term_hashes=state.get("term_hashes"))
        if featurizer.context_model:
            featurizer.context = open_states(featurizer.context_model, layers=featurizer.context_layers)
    members = config.get("members", 1)
    model = models.Ensemble([make() for _ in range(members)]) if members > 1 else make()
    missing, unexpected = model.load_state_dict(torch.load(folder / WEIGHTS, map_location="cpu", weights_only=True),
                                                strict=False)
    if unexpected or any(not re.sub(r"^members\.\d+\.", "", key).startswith(FROZEN) for key in missing):
        raise ValueError(f"{folder / WEIGHTS} does not fit its config: missing {missing[:3]}, unexpected {unexpected[:3]}")
    meta = {k: v for k, v in config.items()
            if k not in ("kind", "track", "groups", "featurizer", "char_config", "members")}
    return SpanTagger(config["kind"], config["track"], groups, model, featurizer, meta)
