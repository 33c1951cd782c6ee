"""Lexical counterspeech metrics: ROUGE, METEOR, repetition rate, diversity and novelty.

Definitions are in docs/metrics.md. Chinese text (any CJK character) is segmented with
jieba, because rouge-score's default tokenizer keeps only [a-z0-9] and would drop it.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

from rebuttal import config
from rebuttal.optional import require

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_WORD = re.compile(r"\w+", re.UNICODE)
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
REPETITION_N = 3


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def _jieba_words(text: str) -> list[str]:
    jieba = require("jieba", "eval")
    jieba.setLogLevel(60)  # its start-up banner goes to stderr otherwise
    return [w.lower() for w in jieba.lcut(text) if _WORD.search(w)]


def words(text: str) -> list[str]:
    """Lower-cased word tokens: jieba words for CJK text, \\w+ runs otherwise (no stemming).
    Used by METEOR, repetition, diversity and novelty."""
    if has_cjk(text):
        return _jieba_words(text)
    return [w.lower() for w in _WORD.findall(text)]


class RougeTokenizer:
    """rouge-score tokenizer: its default (lower-case, [a-z0-9], Porter stems) for
    non-CJK text; jieba words for text with CJK characters."""

    def __init__(self, use_stemmer: bool = True):
        tokenizers = require("rouge_score.tokenizers", "eval")
        self._default = tokenizers.DefaultTokenizer(use_stemmer=use_stemmer)

    def tokenize(self, text: str) -> list[str]:
        if has_cjk(text):
            return _jieba_words(text)
        return self._default.tokenize(text)


@lru_cache(maxsize=1)
def _rouge_scorer():
    rouge_scorer = require("rouge_score.rouge_scorer", "eval")
    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), tokenizer=RougeTokenizer())


def rouge(reply: str, references: list[str]) -> dict[str, float]:
    """ROUGE-1/2/L F1 against the best-matching reference (rouge-score's score_multi)."""
    scores = _rouge_scorer().score_multi(references, reply)
    return {name: float(scores[name].fmeasure) for name in ROUGE_TYPES}


# ------------------------------------------------------------------ METEOR / WordNet


class WordNetMissing(RuntimeError):
    """NLTK's WordNet corpus (needed by METEOR) is not laid out."""


def nltk_data_dir() -> Path:
    """Where scripts/setup_wordnet.sh puts the NLTK corpora by default."""
    return config.home_dir() / "nltk_data"


@lru_cache(maxsize=1)
def ensure_wordnet() -> str:
    """Make NLTK find WordNet (our data dir first) and return its version, or raise."""
    nltk = require("nltk", "eval")
    folder = str(nltk_data_dir())
    if folder not in nltk.data.path:
        nltk.data.path.insert(0, folder)
    try:
        nltk.data.find("corpora/wordnet")
        from nltk.corpus import wordnet

        wordnet.ensure_loaded()
        return f"WordNet {wordnet.get_version()}"
    except (LookupError, OSError) as exc:
        raise WordNetMissing(
            "METEOR needs NLTK's WordNet corpus, which is not installed. Run "
            f"`bash scripts/setup_wordnet.sh` (installs Debian's wordnet-base and "
            f"wordnet-sense-index and lays them out in {folder}); details: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
        ) from None


def meteor(reply: str, references: list[str]) -> float:
    """NLTK METEOR (alpha 0.9, beta 3, gamma 0.5; exact, Porter-stem and WordNet-synonym
    matches) against all references; NLTK keeps the best reference."""
    ensure_wordnet()
    from nltk.translate.meteor_score import meteor_score

    hypothesis = words(reply)
    refs = [tokens for tokens in (words(r) for r in references) if tokens]
    if not hypothesis or not refs:
        return 0.0
    return float(meteor_score(refs, hypothesis))


# ------------------------------------------------------------------ surface statistics


def diversity(reply: str) -> float:
    """Unique tokens / total tokens of one reply (0 for an empty reply)."""
    tokens = words(reply)
    return len(set(tokens)) / len(tokens) if tokens else 0.0


def novelty(reply: str, references: list[str]) -> float:
    """1 - the highest Jaccard similarity between the reply's token set and a reference's."""
    tokens = set(words(reply))
    best = 0.0
    for reference in references:
        ref_tokens = set(words(reference))
        union = tokens | ref_tokens
        if union:
            best = max(best, len(tokens & ref_tokens) / len(union))
    return 1.0 - best


def _ngrams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def repetition_rates(replies: list[str], n: int = REPETITION_N) -> list[float]:
    """Per reply: the share of its distinct word n-grams that also occur in another reply
    of the same system (template-like, repeated wording across outputs). A reply with
    fewer than n tokens has no n-grams and scores 0."""
    grams = [_ngrams(words(reply), n) for reply in replies]
    counts = Counter(g for reply_grams in grams for g in reply_grams)  # replies containing g
    rates = []
    for reply_grams in grams:
        if not reply_grams:
            rates.append(0.0)
            continue
        repeated = sum(1 for g in reply_grams if counts[g] > 1)
        rates.append(repeated / len(reply_grams))
    return rates
