"""Batch I/O: the local and Ray runners over JSONL/Parquet rows. Depends only on rebuttal.types."""
