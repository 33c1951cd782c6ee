"""The English gate's token head: one small transformer layer over MiniLM's frozen token states.

A linear model over one sentence vector and n-grams cannot tell "I love women" or "saying that
women are stupid is vile" from the hate they mention: on held-out HateCheck templates it called
47% of non-hateful cases hateful at 90% hateful recall. The head reads every token's contextual
state and learns where a group is praised, negated or quoted (30% at the same recall,
benchmarks/results/gate.md). MiniLM stays frozen: only the head (~0.2M weights) is trained and
shipped, and training takes minutes on a CPU.
"""

from __future__ import annotations

import numpy as np

from rebuttal.optional import require

MAX_TOKENS = 48  # HateCheck cases are ~12 tokens; longer posts are judged on their opening
WIDTH, HEADS, FEEDFORWARD = 128, 4, 256


def _torch():
    return require("torch", "memory")


def build_head(seed: int = 0):
    torch = _torch()
    torch.manual_seed(seed)

    class TokenHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(384, WIDTH)
            layer = torch.nn.TransformerEncoderLayer(WIDTH, HEADS, FEEDFORWARD, dropout=0.1, batch_first=True)
            self.layers = torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
            self.out = torch.nn.Linear(WIDTH, 1)

        def forward(self, states, mask):
            hidden = self.layers(self.proj(states), src_key_padding_mask=~mask)
            weights = mask.unsqueeze(-1).float()
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)
            return self.out(pooled).squeeze(-1)

    return TokenHead()


def fit_head(states: np.ndarray, mask: np.ndarray, hateful: np.ndarray, *, epochs: int = 4, seed: int = 0,
             batch_size: int = 32, lr: float = 5e-4):
    """Class-balanced binary cross-entropy; states are float16 from `MiniLM.token_states`."""
    torch = _torch()
    head = build_head(seed).train()
    states_t, mask_t = torch.from_numpy(states), torch.from_numpy(mask)
    labels = torch.from_numpy(np.asarray(hateful, dtype=np.float32))
    positive = float(labels.mean())
    weights = torch.where(labels > 0, 0.5 / positive, 0.5 / (1 - positive))
    optimiser = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=0.01)
    order = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for batch in torch.randperm(len(labels), generator=order).split(batch_size):
            logits = head(states_t[batch].float(), mask_t[batch])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels[batch], reduction="none")
            optimiser.zero_grad()
            (loss * weights[batch]).mean().backward()
            optimiser.step()
    return head.eval()


def head_probabilities(head, states: np.ndarray, mask: np.ndarray, batch_size: int = 256) -> np.ndarray:
    torch = _torch()
    out = []
    with torch.inference_mode():
        for start in range(0, len(states), batch_size):
            chunk = slice(start, start + batch_size)
            logits = head(torch.from_numpy(states[chunk]).float(), torch.from_numpy(mask[chunk]))
            out.append(torch.sigmoid(logits).numpy())
    return np.concatenate(out) if out else np.zeros(0, np.float32)


def head_arrays(head, prefix: str) -> dict[str, np.ndarray]:
    return {f"{prefix}{name}": value.detach().numpy().astype(np.float32) for name, value in head.state_dict().items()}


def head_from_arrays(arrays: dict[str, np.ndarray], prefix: str):
    torch = _torch()
    head = build_head()
    state = {name[len(prefix):]: torch.from_numpy(np.asarray(arrays[name])) for name in arrays if name.startswith(prefix)}
    head.load_state_dict(state)
    return head.eval()
