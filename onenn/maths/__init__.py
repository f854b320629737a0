"""The mathematics of docs/method.md sections 1-4: the model, its gradient, the losses, the family, prompts."""
