"""What the draft score reads of a reply *and the post it answers* (issue 46).

A reply read alone cannot tell a vetted block that answers the post's claim from the same block
under a post about something else, which is how most block replies failed on graded dev posts
("unfaithful": it rebuts a neighbouring claim). So the score reads the two together: the chat
model's states of "Post: ... Reply: ..." after its first layers, pooled over the reply's tokens
(which have read the post), the last token and the post's tokens; or, as the fallback without the
chat model, MiniLM vectors of both and their product.
"""

from __future__ import annotations

import numpy as np

POST_CHARS = 300  # of the post, cut at a word: the claim sits early, and the reply must fit the reader


def cut_post(post: str, limit: int = POST_CHARS) -> str:
    post = " ".join(post.split())
    return post if len(post) <= limit else post[:limit].rsplit(" ", 1)[0] + " ..."


def pair_prefix(post: str) -> str:
    return f"Post: {cut_post(post)}\nReply:"


def pair_states(reader, post: str, replies: list[str]) -> np.ndarray:
    """Per reply: the mean of its token states and the last token's state, read after the post as
    one text, (n, 2 * dim). `reader`: a states reader (llm.states)."""
    prefix = pair_prefix(post)
    cut = reader.count_tokens(prefix)
    out = np.zeros((len(replies), 2 * reader.dim), dtype=np.float32)
    for i, reply in enumerate(replies):
        _, states = reader.token_states(f"{prefix} {reply}")
        if len(states) < 2:
            continue
        edge = min(cut, len(states) - 1)
        out[i] = np.concatenate([states[edge:].mean(axis=0), states[-1]])
    return out


def pair_vectors(encoder, post: str, replies: list[str]) -> np.ndarray:
    """Per reply: its MiniLM vector, its product with the post's, and their cosine, (n, 2 * 384 + 1)."""
    vectors = encoder.encode([post, *replies])
    post_vector, reply_vectors = vectors[0], vectors[1:]
    products = reply_vectors * post_vector
    return np.hstack([reply_vectors, products, products.sum(axis=1, keepdims=True)]).astype(np.float32)
