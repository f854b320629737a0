"""Developer tools, outside the product; run them from the repository's root:

- ``python -m tools.bench``: the training engine's benchmark;
- ``python -m tools.bench_run``: the whole run's benchmark;
- ``python -m tools.startup``: the fixed start-up cost of each kind of job;
- ``python -m tools.compare_tables OLD NEW``: two runs' tables compared;
- ``python -m tools.fused_probe``: the fused CUDA kernel's registers, compiled ahead for a GPU (and its stream,
  written out, for the tests);
- ``bash tests/gpu/check.sh`` (``tools.gpu_check``): the GPU check of the fused CUDA engine.
"""
