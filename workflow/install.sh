#!/usr/bin/env bash
# Set up onenn in the active virtual environment, at the exact versions of the lock (README, set-up):
#   1. every package the main job and the tests need, with the versions and hashes of requirements.lock (all but
#      torch; torch's own dependencies are in it);
#   2. torch, the version of workflow/envs/torch.txt, hash-checked against the wheels listed there:
#      - on Linux x86_64 without a GPU driver (none of GPU_DRIVER_FILES below), PyTorch's CPU build from
#        https://download.pytorch.org/whl/cpu (a few hundred MB instead of the CUDA build's few GB), where that
#        index answers and serves the listed wheel;
#      - otherwise from the package index (here, the machine's CPU wheel; on Linux elsewhere, PyPI's CUDA build);
#      - with TORCH_INDEX_URL set, from that index (e.g. https://download.pytorch.org/whl/cu128 for the CUDA 12.8
#        build, https://pypi.org/simple for PyPI's build even without a GPU driver), without the hash check:
#        torch.txt lists the hashes of the CPU build and of PyPI's wheels only;
#   3. on Linux x86_64, triton, the version of workflow/envs/triton.txt (the one torch's CUDA build requires),
#      hash-checked: the fused CUDA engine's compiler, whose tests run the kernel in Triton's interpreter on the CPU;
#   4. the rest of torch's dependencies, none for a CPU build (the lock has them all); a CUDA build's CUDA
#      packages, from torch's index, without hashes (the lock leaves them out: workflow/envs/no-cuda.txt);
#   5. onenn itself, editable, without dependencies and without build isolation (setuptools comes from the lock).
# Refuses to install outside a virtual environment (ONENN_ANY_PYTHON=1 allows it, e.g. in a conda environment).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${ONENN_ANY_PYTHON:-0}" != 1 ]] && python -c 'import sys; sys.exit(sys.prefix != sys.base_prefix)'; then
    echo "workflow/install.sh: $(command -v python) is not in a virtual environment; first run:" >&2
    echo "  python3 -m venv .venv && . .venv/bin/activate" >&2
    exit 1
fi
# Files of which one is present wherever a GPU driver that torch can use is (NVIDIA's, ROCm's, WSL's): the list
# of onenn/training/train.py's GPU_DRIVER_FILES (onenn is not installed yet; tests/repo/test_environment.py
# checks that the two agree).
GPU_DRIVER_FILES=(/proc/driver/nvidia /dev/nvidiactl /dev/nvidia0 /dev/kfd /dev/dxg)
CPU_INDEX_URL="${ONENN_CPU_INDEX_URL:-https://download.pytorch.org/whl/cpu}"
gpu_driver_present() {
    local file
    for file in "${GPU_DRIVER_FILES[@]}"; do [[ -e "$file" ]] && return 0; done
    return 1
}
answers() { # whether the package index $1 lists torch, within 15 seconds
    python -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=15)' \
        "$1" 2>/dev/null
}
platform="$(uname -s)-$(uname -m)"
pin="$(grep -oE '^torch==[^ ]+' workflow/envs/torch.txt)"
wheels="$(mktemp -d)"
trap 'rm -rf "$wheels"' EXIT
install_torch() { # $@: the index's pip options. The wheel pip chooses there (pip's own choice: in hash mode it
    # would prefer any index link that carries a listed hash to a local wheel), then installed hash-checked.
    rm -rf "${wheels:?}"/*
    python -m pip download --quiet --no-deps --dest "$wheels" "$@" "$pin" &&
        python -m pip install --quiet --require-hashes --no-deps --no-index --find-links "$wheels" \
            -r workflow/envs/torch.txt
}

python -m pip install --quiet --require-hashes -r requirements.lock
if [[ -n "${TORCH_INDEX_URL:-}" ]]; then
    echo "workflow/install.sh: $pin from $TORCH_INDEX_URL, without the hash check" >&2
    index="$TORCH_INDEX_URL"
    python -m pip install --quiet --no-deps --index-url "$index" "$pin"
elif [[ "$platform" == Linux-x86_64 ]] && ! gpu_driver_present && answers "$CPU_INDEX_URL" &&
    install_torch --index-url "$CPU_INDEX_URL"; then
    echo "workflow/install.sh: no GPU driver here: $pin, PyTorch's CPU build, from $CPU_INDEX_URL" >&2
    index="$CPU_INDEX_URL"
else
    if [[ "$platform" == Linux-x86_64 ]] && ! gpu_driver_present; then
        echo "workflow/install.sh: no GPU driver here, but $CPU_INDEX_URL did not answer or had no listed wheel:" \
            "$pin from the package index" >&2
    fi
    index=""
    install_torch
fi
if [[ "$platform" == Linux-x86_64 ]]; then
    python -m pip install --quiet --require-hashes -r workflow/envs/triton.txt
fi
python -m pip install --quiet ${index:+--index-url "$index"} "$pin"
python -m pip install --quiet --no-deps --no-build-isolation -e .
python -m pip check
