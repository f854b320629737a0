#!/usr/bin/env bash
# Set up onenn in the active virtual environment, at the exact versions of the lock (README, set-up):
#   1. every package the main job and the tests need, with the versions and hashes of requirements.lock (all but
#      torch; torch's own dependencies are in it);
#   2. torch, the version of workflow/envs/torch.txt: from the package index (here, the machine's CPU wheel), or,
#      with TORCH_INDEX_URL set, from that index (e.g. https://download.pytorch.org/whl/cu128 for the CUDA 12.8
#      build);
#   3. on Linux x86_64, triton, the version of workflow/envs/triton.txt (the one torch's CUDA build requires): the
#      fused CUDA engine's compiler, whose tests run the kernel in Triton's interpreter on the CPU;
#   4. onenn itself, editable, without dependencies and without build isolation (setuptools comes from the lock).
# Refuses to install outside a virtual environment (ONENN_ANY_PYTHON=1 allows it, e.g. in a conda environment).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${ONENN_ANY_PYTHON:-0}" != 1 ]] && python -c 'import sys; sys.exit(sys.prefix != sys.base_prefix)'; then
    echo "workflow/install.sh: $(command -v python) is not in a virtual environment; first run:" >&2
    echo "  python3 -m venv .venv && . .venv/bin/activate" >&2
    exit 1
fi
python -m pip install --quiet --require-hashes -r requirements.lock
python -m pip install --quiet ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} -r workflow/envs/torch.txt
if [[ "$(uname -s)-$(uname -m)" == Linux-x86_64 ]]; then
    python -m pip install --quiet -r workflow/envs/triton.txt
fi
python -m pip install --quiet --no-deps --no-build-isolation -e .
python -m pip check
