#!/usr/bin/env bash
# The GPU check of the fused CUDA engine (docs/performance.md#gpu): on a machine with an NVIDIA GPU, in the
# project's environment (workflow/install.sh with a CUDA build of torch, docs/install.md), from anywhere:
#   bash tests/gpu/check.sh                 # about 9 minutes on one GPU; prints one table
#   bash tests/gpu/check.sh --dry-run       # the plan, without a GPU
#   bash tests/gpu/check.sh --help          # stages, budget, output file (default benchmarks/gpu.md)
# It stops at once, with a message that says so, where torch sees no GPU. The limit below leaves it 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec timeout -k 10 600 python -m onenn.training.gpu_check "$@"
