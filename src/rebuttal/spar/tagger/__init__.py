"""The trained SPAR span tagger: BIO target/argument spans, pairing, harmful label and group.

`rebuttal spar train` trains one per track on the gold files (`train.py`); `rebuttal run
--system spar-tagger` parses with it alone (`parser.py`). Torch is imported lazily (by
`models.py`, `core.py` at use). No weights are shipped: see MODEL_CARD.md written by training.
"""
