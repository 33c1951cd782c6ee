"""Start the character tagger's embeddings from the chat model's own token embeddings.

There is no packaged Chinese encoder, but the embedded Qwen GGUF holds an input embedding for
every token of its vocabulary, most common Chinese characters and many two-character words
among them. A character (or character pair) gets the mean of its tokens' rows, reduced by PCA
to the tagger's embedding width and scaled like torch's default initialisation; training then
fine-tunes them. Reading the matrix needs the `gguf` package (`pip install 'rebuttal[train]'`);
tokenising uses llama.cpp in vocabulary-only mode (no weights are evaluated).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rebuttal.optional import require

EMBEDDING_TENSOR = "token_embd.weight"


def token_vectors(gguf_path: str | Path, strings: list[str]) -> np.ndarray:
    """One row per string: the mean of the input embeddings of the tokens it is split into."""
    gguf = require("gguf", "train")
    llama_cpp = require("llama_cpp", "llama")
    vocab = llama_cpp.Llama(str(gguf_path), vocab_only=True, verbose=False)
    pieces = [vocab.tokenize(s.encode("utf-8"), add_bos=False, special=False) or [] for s in strings]
    tensor = next((t for t in gguf.GGUFReader(str(gguf_path)).tensors if t.name == EMBEDDING_TENSOR), None)
    if tensor is None:
        raise ValueError(f"{gguf_path} has no {EMBEDDING_TENSOR} tensor")
    used = sorted({t for ids in pieces for t in ids})
    rows = gguf.quants.dequantize(np.asarray(tensor.data[used]), tensor.tensor_type).astype(np.float32)
    index = {token: i for i, token in enumerate(used)}
    out = np.zeros((len(strings), rows.shape[1]), dtype=np.float32)
    for i, ids in enumerate(pieces):
        if ids:
            out[i] = rows[[index[t] for t in ids]].mean(axis=0)
    return out


def reduced(vectors: np.ndarray, width: int, seed: int = 0) -> np.ndarray:
    """PCA to `width` columns, scaled to unit variance per entry (like nn.Embedding's N(0, 1)).
    With fewer rows than `width` (a tiny vocabulary) the missing columns start at zero."""
    decomposition = require("sklearn.decomposition", "train")
    kept = min(width, *vectors.shape)
    low = decomposition.PCA(n_components=kept, random_state=seed).fit_transform(vectors)
    low = low / (low.std() + 1e-8)
    return np.pad(low, ((0, 0), (0, width - kept))).astype(np.float32)


def initialise(model, featurizer, gguf_path: str | Path) -> dict:
    """Overwrite the character (and bigram) embedding rows of a fresh `CharTagger` in place.
    Returns what was done, for the model card."""
    torch = require("torch", "memory")
    chars = sorted(featurizer.vocab, key=featurizer.vocab.get)
    pairs = sorted(featurizer.bigrams, key=featurizer.bigrams.get)
    raw = token_vectors(gguf_path, chars + pairs)
    cfg = model.cfg
    low = reduced(raw, max(cfg.char_dim, cfg.bigram_dim if pairs else 0))
    with torch.no_grad():
        model.chars.weight[[featurizer.vocab[c] for c in chars]] = torch.from_numpy(low[:len(chars), :cfg.char_dim])
        if pairs and model.bigrams is not None:
            ids = [featurizer.bigrams[p] for p in pairs]
            model.bigrams.weight[ids] = torch.from_numpy(low[len(chars):, :cfg.bigram_dim].copy())
    return {"vectors_from": Path(gguf_path).name, "tensor": EMBEDDING_TENSOR, "chars": len(chars),
            "bigrams": len(pairs), "width": int(raw.shape[1])}
