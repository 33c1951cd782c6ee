"""Local evidence store: hybrid ranking, relevance floor, embedding cache, save/load."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from rebuttal.evidence import LocalEvidenceStore, Passage, SearchError
from rebuttal.types import EvidenceItem, SourceTier

TINY = [
    Passage(id="p1", text="Studies across Europe find no link between immigration and higher crime "
            "rates once age and income are accounted for.", source="Review A", tier="institutional"),
    Passage(id="p2", text="Women hold about 10 percent of CEO positions in Fortune 500 companies, and "
            "firms with diverse boards perform as well or better.", source="Report B"),
    Passage(id="p3", text="The Protocols of the Elders of Zion is a forgery fabricated by the Russian "
            "secret police in the early twentieth century.", source="Museum C", url="https://example.org/c"),
    Passage(id="p4", text="Major medical associations agree that children raised by same-sex parents "
            "fare as well as children of different-sex parents.", source="Association D"),
    Passage(id="p5", text="Vaccines do not cause autism; large cohort studies of millions of children "
            "found no association.", source="Journal E", date="2019"),
    Passage(id="p6", text="Refugees in Germany increasingly find jobs: about half were employed within "
            "six years of arrival.", source="Institute F"),
]


class HashEncoder:
    """Deterministic bag-of-words vectors, so cache tests need no model; counts texts encoded."""

    def __init__(self, dim: int = 64):
        self.dim = dim
        self.encoded: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.encoded += texts
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return out


@pytest.fixture(scope="module")
def minilm_store() -> LocalEvidenceStore:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("bm25s")
    return LocalEvidenceStore(TINY).build()


def test_lexical_query_ranks_the_matching_passage_first(minilm_store):
    items = minilm_store.search("Protocols of the Elders of Zion forgery", k=3)
    assert items[0].id == "p3"
    assert isinstance(items[0], EvidenceItem)
    assert items[0].source == "Museum C" and items[0].url == "https://example.org/c"
    assert items[0].score > 0.5


@pytest.mark.parametrize("query, expected", [
    ("gay couples are bad for kids", "p4"),           # no word in common with p4
    ("do asylum seekers just live on benefits", "p6"),
])
def test_paraphrased_query_is_found_by_the_encoder(minilm_store, query, expected):
    scores = minilm_store.scores(query)
    assert scores["lexical"][[p.id for p in TINY].index(expected)] == 0.0  # BM25 alone is blind
    items = minilm_store.search(query, k=3)
    assert items and items[0].id == expected


def test_off_topic_query_returns_nothing_above_the_floor(minilm_store):
    assert minilm_store.search("best chocolate cake recipe", k=3) == []


def test_blend_scores_are_bounded_and_keep_metadata():
    store = LocalEvidenceStore(TINY, encoder=HashEncoder())
    items = store.search("vaccines autism cohort studies", k=2)
    assert items[0].id == "p5" and items[0].date == "2019"
    assert all(0.0 < item.score <= 1.0 for item in items)
    assert store.get("p1").tier == SourceTier.institutional


def test_rrf_and_lexical_fusions_rank_the_exact_match_first():
    for fusion in ("rrf", "lexical"):
        store = LocalEvidenceStore(TINY, encoder=HashEncoder(), fusion=fusion)
        assert store.search("refugees employed germany", k=1)[0].id == "p6"


def test_embeddings_are_cached_and_only_changed_passages_re_embedded(tmp_path):
    first = HashEncoder()
    LocalEvidenceStore(TINY, encoder=first, index_dir=tmp_path).build()
    assert len(first.encoded) == len(TINY)
    assert (tmp_path / "embeddings.npy").exists() and (tmp_path / "manifest.json").exists()

    second = HashEncoder()
    warm = LocalEvidenceStore(TINY, encoder=second, index_dir=tmp_path).build()
    assert second.encoded == [] and warm.embedded_now == 0

    changed = [*TINY[:5], TINY[5].model_copy(update={"text": "Refugees found work within six years."})]
    third = HashEncoder()
    store = LocalEvidenceStore(changed, encoder=third, index_dir=tmp_path).build()
    assert third.encoded == ["Refugees found work within six years."]
    assert store.content_hash() != warm.content_hash()


def test_another_encoder_does_not_reuse_the_cache(tmp_path):
    LocalEvidenceStore(TINY, encoder=HashEncoder(), index_dir=tmp_path).build()
    other = HashEncoder(dim=32)
    LocalEvidenceStore(TINY, encoder=other, encoder_name="other-model", index_dir=tmp_path).build()
    assert len(other.encoded) == len(TINY)


def test_save_and_load_round_trip(tmp_path):
    encoder = HashEncoder()
    store = LocalEvidenceStore([p.model_copy(update={"corpus": "tiny"}) for p in TINY], encoder=encoder)
    store.save(tmp_path / "index")
    reloaded_encoder = HashEncoder()
    loaded = LocalEvidenceStore.load(tmp_path / "index", encoder=reloaded_encoder).build()
    assert reloaded_encoder.encoded == []  # every vector came from embeddings.npy
    assert [p.id for p in loaded.passages] == [p.id for p in TINY]
    assert loaded.passages[0].corpus == "tiny"
    query = "medical associations same-sex parents"
    assert loaded.search(query) == store.search(query)


def test_bad_queries_and_broken_encoders_raise_search_error():
    store = LocalEvidenceStore(TINY, encoder=HashEncoder())
    with pytest.raises(SearchError, match="empty"):
        store.search("   ")
    with pytest.raises(SearchError, match="positive integer"):
        store.search("crime", k=0)

    def broken(texts):
        raise RuntimeError("encoder crashed")

    with pytest.raises(SearchError, match="encoder crashed"):
        LocalEvidenceStore(TINY, encoder=broken).search("crime")


def test_duplicate_ids_are_rejected():
    with pytest.raises(ValueError, match="duplicate passage ids"):
        LocalEvidenceStore([TINY[0], TINY[0]], encoder=HashEncoder())
