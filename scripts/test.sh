#!/usr/bin/env bash
# Install taigym with its test dependencies and run the test suite (quick set: -m "not slow").
# Works on a fresh machine with Python >= 3.10: everything comes from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet -e ".[dev,train]"
python3 -m pytest -q "$@"
