"""SGD: a run's setup (``run_setup``), the run loop (``train``), the training engine and its minibatch sources
(``engine``, ``sources``) with their compiled CPU kernels, the fused CUDA engine (one Triton kernel; ``fused``) and
its check (``fused_check``), the autograd baseline, and binary SGD on a fixed training set."""
