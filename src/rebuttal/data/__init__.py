"""Data in and out: the local and Ray batch runners over JSONL/Parquet rows, and the SPAR gold
loaders (`gold.py`, with their vocabulary in `vocab.py`), which `learned` reads too. Depends
only on rebuttal.types, config and optional."""
