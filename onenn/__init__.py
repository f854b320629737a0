"""onenn: a one-layer softmax-attention transformer learning the multiclass 1-NN rule in context."""
