"""SGD: the fused training engine, the trainer and its run record, the autograd baseline, the engine
benchmark (``python -m onenn.training.bench``) and binary SGD on a fixed training set."""
