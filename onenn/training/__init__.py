"""SGD: the fused training engine and its compiled CPU kernels, the fused CUDA engine (one Triton kernel;
``fused``), the trainer and its run record, the autograd baseline, and binary SGD on a fixed training set."""
