#!/usr/bin/env bash
# Install taigym with its test dependencies and run the test suite.
# Works on a fresh machine with Python >= 3.10: everything comes from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet -e ".[dev]"
python3 -m pytest -q "$@"
