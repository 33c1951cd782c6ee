"""Dataset loaders and batch I/O. Depends only on rebuttal.types."""
