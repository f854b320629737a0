#!/usr/bin/env bash
# The GPU check of the GPU engine (docs/performance.md#gpu): on a machine with an NVIDIA GPU, with a Python
# that has torch's CUDA build and triton (the project's environment, docs/install.md, or any such Python: the
# checkout is put on PYTHONPATH; without snakemake the last stage is skipped), from anywhere:
#   bash tests/gpu/check.sh                     # about 9 minutes on one GPU; prints one table
#   bash tests/gpu/check.sh --dry-run           # the plan, without a GPU
#   bash tests/gpu/check.sh --output FILE       # where the table goes (default benchmarks/gpu.md)
#   bash tests/gpu/check.sh --help              # the stages, the budget and the other options
# It stops at once, with a message that says so, where torch sees no GPU. The limit below leaves it 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
exec timeout -k 10 600 "${PYTHON:-python3}" -m tests.gpu.check "$@"
