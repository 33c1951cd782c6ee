"""Small models trained on the data we hold, for the judgements a 1.5B chat model does badly.

- `category`: FIRE's hate category from MiniLM sentence vectors (logistic regression), combined
  with the memory's per-category scores.
- `gate`: is the post hateful at all (both languages: the chat model's layer-14 states, with
  MiniLM vectors + word n-grams (English) or character n-grams (Chinese) as the fallback when
  that model is not installed), per-language thresholds.

Weights are plain .npz arrays (no pickles) with a model card beside them; inference is numpy
(plus scikit-learn's stateless HashingVectorizer, and llama.cpp for the gate's states);
training needs scikit-learn.
"""

from rebuttal.learned.category import CategoryModel
from rebuttal.learned.gate import HateGate

__all__ = ["CategoryModel", "HateGate"]
