#!/usr/bin/env bash
# Install taigym with its test dependencies and run the test suite.
# Works on a fresh machine with Python >= 3.10: everything comes from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --upgrade pip
# the CPU build of torch first: a plain resolve would pull several GB of CUDA packages
python3 -m pip install --quiet "torch==2.13.0"
python3 -m pip install --quiet -e ".[dev,train]"
python3 -m pytest -q "$@"
