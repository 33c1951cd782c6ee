"""Shipped weights and model cards of the evaluation judges (data only)."""
