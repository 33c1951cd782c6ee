"""FIRE memory: SupCon-trained encoder, exemplar index, per-category scores and purity.

    from rebuttal.memory import Memory
    result = Memory.default().query("some post")   # scores, t̂, ρ, exemplars
"""

from rebuttal.memory.encoders import (
    BaseEncoder,
    Encoder,
    FullEncoder,
    HeadEncoder,
    ProjectionHead,
    load_encoder,
)
from rebuttal.memory.index import VectorIndex, brute_force_search
from rebuttal.memory.store import DEFAULT_K, DEFAULT_THRESHOLD, Memory, MemoryQuery, Neighbour

__all__ = [
    "DEFAULT_K", "DEFAULT_THRESHOLD", "BaseEncoder", "Encoder", "FullEncoder", "HeadEncoder",
    "Memory", "MemoryQuery", "Neighbour", "ProjectionHead", "VectorIndex", "brute_force_search",
    "load_encoder",
]
