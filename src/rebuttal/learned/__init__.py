"""Small models trained on the data we hold, for the judgements a 1.5B chat model does badly.

- `category`: FIRE's hate category from MiniLM sentence vectors (logistic regression), combined
  with the memory's per-category scores.
- `gate`: is the post hateful at all (English: MiniLM vectors + word n-grams; Chinese: the chat
  model's layer-14 states, with character n-grams as the fallback), per-language thresholds.

Weights are plain .npz arrays (no pickles) with a model card beside them; inference is numpy
(plus scikit-learn's stateless HashingVectorizer, and llama.cpp for the Chinese gate's states);
training needs scikit-learn.
"""

from rebuttal.learned.category import CategoryModel
from rebuttal.learned.gate import HateGate

__all__ = ["CategoryModel", "HateGate"]
