"""Developer tools, outside the product: the training engine's benchmark (``python -m tools.bench``), the whole
run's benchmark (``python -m tools.bench_run``), the start-up profiler of the job kinds (``python -m
tools.startup``), the GPU check of the fused CUDA engine (``bash tests/gpu/check.sh``) and the register report of
the fused kernel compiled ahead for a GPU (``python -m tools.ptxas``). Run them from the repository's root."""
