"""Torch modules of the span tagger: an encoder (MiniLM word pieces, or characters from scratch
with a lexicon feature) and five unit-level heads (target BIO, argument BIO, harmful, implicit
target, group). Imported lazily: it needs torch (and transformers for MiniLM)."""

from __future__ import annotations

from dataclasses import dataclass

from rebuttal.optional import require

torch = require("torch", "memory")
nn = torch.nn
F = torch.nn.functional

IGNORE = -100
HEADS = ("target", "argument", "harm", "null", "group")


class Heads(nn.Module):
    def __init__(self, dim: int, n_groups: int, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.target = nn.Linear(dim, 3)
        self.argument = nn.Linear(dim, 3)
        self.harm = nn.Linear(2 * dim, 2)  # unit state + the post's mean state
        self.null = nn.Linear(2 * dim, 2)
        self.group = nn.Linear(2 * dim, n_groups) if n_groups else None

    def forward(self, states, mask) -> dict:
        h = self.dropout(states)
        weights = mask.unsqueeze(-1).float()
        pooled = (h * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        both = torch.cat([h, pooled.unsqueeze(1).expand_as(h)], dim=-1)
        out = {"target": self.target(h), "argument": self.argument(h), "harm": self.harm(both),
               "null": self.null(both)}
        if self.group is not None:
            out["group"] = self.group(both)
        return out


def loss(outputs: dict, labels: dict) -> "torch.Tensor":
    total = 0.0
    for name, logits in outputs.items():
        gold = labels[name]
        if (gold != IGNORE).any():
            total = total + F.cross_entropy(logits.reshape(-1, logits.shape[-1]), gold.reshape(-1),
                                            ignore_index=IGNORE)
    return total


@dataclass
class CharConfig:
    vocab_size: int
    n_groups: int
    encoder: str = "bilstm"  # bilstm | cnn
    char_dim: int = 128
    lex_dim: int = 16
    hidden: int = 128
    dropout: float = 0.25
    bigram_size: int = 0  # 0 = no character-bigram embeddings
    bigram_dim: int = 64
    word_dim: int = 0  # 0 = no jieba word-position feature
    context_dim: int = 0  # width of the chat model's hidden states; 0 = not used
    context_out: int = 128


class CharTagger(nn.Module):
    """Characters, optional character bigrams (the pair starting and the pair ending at each
    character), optional jieba word positions, optional contextual states of the chat model and a
    3-way lexicon feature (outside / first char / inside a slang term) → BiLSTM or a dilated CNN
    → heads."""

    def __init__(self, cfg: CharConfig):
        super().__init__()
        self.cfg = cfg
        self.chars = nn.Embedding(cfg.vocab_size, cfg.char_dim, padding_idx=0)
        self.lexicon = nn.Embedding(3, cfg.lex_dim)
        self.bigrams = nn.Embedding(cfg.bigram_size, cfg.bigram_dim, padding_idx=0) if cfg.bigram_size else None
        self.words = nn.Embedding(5, cfg.word_dim, padding_idx=0) if cfg.word_dim else None
        # Hidden states are normalised, then projected: their scale differs per dimension.
        self.context = (nn.Sequential(nn.LayerNorm(cfg.context_dim), nn.Linear(cfg.context_dim, cfg.context_out))
                        if cfg.context_dim else None)
        width = (cfg.char_dim + cfg.lex_dim + (2 * cfg.bigram_dim if cfg.bigram_size else 0) + cfg.word_dim
                 + (cfg.context_out if cfg.context_dim else 0))
        self.embed_dropout = nn.Dropout(cfg.dropout)
        if cfg.encoder == "bilstm":
            self.encoder = nn.LSTM(width, cfg.hidden, num_layers=2, batch_first=True, bidirectional=True,
                                   dropout=cfg.dropout)
        elif cfg.encoder == "cnn":
            self.encoder = nn.ModuleList([nn.Conv1d(width if i == 0 else 2 * cfg.hidden, 2 * cfg.hidden, 3,
                                                    padding=d, dilation=d) for i, d in enumerate((1, 2, 4, 1))])
        else:
            raise ValueError(f"unknown char encoder {cfg.encoder!r}; choose bilstm or cnn")
        self.heads = Heads(2 * cfg.hidden, cfg.n_groups, cfg.dropout)

    def forward(self, ids, lex, mask, bigrams=None, words=None, context=None) -> dict:
        parts = [self.chars(ids), self.lexicon(lex)]
        if self.bigrams is not None:
            parts += [self.bigrams(bigrams[0]), self.bigrams(bigrams[1])]
        if self.words is not None:
            parts.append(self.words(words))
        if self.context is not None:
            parts.append(self.context(context))
        x = self.embed_dropout(torch.cat(parts, dim=-1))
        if self.cfg.encoder == "bilstm":
            lengths = mask.sum(1).clamp(min=1).cpu()
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            states, _ = self.encoder(packed)
            states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=ids.shape[1])
        else:
            h = x.transpose(1, 2)
            for conv in self.encoder:
                h = F.gelu(conv(h))
            states = h.transpose(1, 2)
        return self.heads(states, mask)


class Ensemble(nn.Module):
    """Taggers trained alike from different seeds, read as one: each head gives the mean of the
    members' log-probabilities (a softmax of it is their normalised geometric mean)."""

    def __init__(self, members: list[nn.Module]):
        super().__init__()
        self.members = nn.ModuleList(members)
        self.cfg = getattr(members[0], "cfg", None)

    def forward(self, *args) -> dict:
        outputs = [member(*args) for member in self.members]
        return {name: torch.stack([o[name].log_softmax(-1) for o in outputs]).mean(0) for name in outputs[0]}


class MiniLMTagger(nn.Module):
    """The packaged all-MiniLM-L6-v2 transformer, fine-tuned, with the heads on its token states."""

    def __init__(self, model_dir: str, n_groups: int):
        super().__init__()
        transformers = require("transformers", "memory")
        self.encoder = transformers.AutoModel.from_pretrained(model_dir)
        self.heads = Heads(self.encoder.config.hidden_size, n_groups, 0.1)

    def forward(self, ids, mask) -> dict:
        states = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        return self.heads(states, mask)
