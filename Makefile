# The two commands the README starts with.
.PHONY: setup demo test bench

EXAMPLE ?= Immigrants are flooding in and most of them end up as criminals living off benefits.

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/rebuttal respond "$(EXAMPLE)"

test: setup
	.venv/bin/python -m pytest -q -p no:cacheprovider

bench: setup
	.venv/bin/python benchmarks/llm_backends.py
