"""SGD: the fused training engine, the fused CUDA engine (one Triton kernel; ``fused``), the trainer and its run
record, the autograd baseline, the engine benchmark (``python -m onenn.training.bench``), the GPU check
(``python -m onenn.training.gpu_check``) and binary SGD on a fixed training set."""
