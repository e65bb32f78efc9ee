#!/usr/bin/env bash
# Install taigym with its test dependencies and run the test suite's quick set: everything
# but the tests marked slow (the long oracle sweeps and the kernel variants compiled for one
# test). `bash scripts/test.sh -m slow` runs those (a later -m replaces this one); .ci/run
# runs both. Works on a fresh machine with Python >= 3.10: everything comes from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet -e ".[dev,train]"
# mjlab's robot files (Go1, G1, YAM) for their tasks; --no-deps: its own requirements pin an
# older MuJoCo than the one the tests check against, and nothing of it is imported
python3 -m pip install --quiet --no-deps "mjlab==1.6.0"
# A cold run is mostly Taichi compiling kernels, one core each: the step kernels most modules
# share first, once (tests/kernel_prebuild.py, before the workers start), then a worker per
# core, up to four (each loads the shared kernels and compiles its modules' others). Each
# worker takes whole test modules, which share their kernels and fixtures.
workers=$(python3 -c "import os; print(max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count() or 1)))")
python3 -m pytest -q -m "not slow" -n "$workers" --dist loadfile "$@"
