"""Supervised contrastive loss exactly as FIRE writes it (torch is imported by the caller).

For a batch of L2-normalised embeddings u and categories y:
  s_ij = cos(u_i, u_j) / tau
  l_i  = -1/|P(i)| * sum_{p in P(i)} log( exp(s_ip) / sum_{a != i} exp(s_ia) )
with P(i) = {j != i : y_j = y_i}. Anchors with an empty P(i) are left out; the batch loss is
the mean of l_i over the remaining anchors (0 with a zero gradient if none remain).
"""

from __future__ import annotations

from typing import Any


def supcon_loss(embeddings: Any, labels: Any, tau: float = 0.1) -> Any:
    import torch

    if embeddings.ndim != 2 or labels.ndim != 1 or len(labels) != len(embeddings):
        raise ValueError("expected embeddings (n, d) and labels (n,)")
    u = torch.nn.functional.normalize(embeddings, dim=1)
    sims = u @ u.T / tau
    n = len(labels)
    self_mask = torch.eye(n, dtype=torch.bool, device=u.device)
    # log of the denominator over all a != i; the diagonal is removed with -inf
    log_denominator = torch.logsumexp(sims.masked_fill(self_mask, float("-inf")), dim=1)
    log_prob = sims - log_denominator[:, None]
    positives = (labels[:, None] == labels[None, :]) & ~self_mask
    counts = positives.sum(dim=1)
    has_positive = counts > 0
    if not bool(has_positive.any()):
        return embeddings.sum() * 0.0
    per_anchor = -(log_prob * positives).sum(dim=1)[has_positive] / counts[has_positive]
    return per_anchor.mean()
