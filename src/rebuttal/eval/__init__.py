"""Evaluation: counterspeech metrics, judges, significance tests and reports (FIRE), and the SPAR scorers."""
