"""The prompt-set jobs: the multiclass test sets and the binary experiment's training and test sets (numpy)."""

from logging import Logger

from onenn.base.io import save_arrays


def test_set_job(
    test_set: str, test_size: int, d: int, N: int, K: int, delta: float | None, seed: int, output: str, log: Logger
) -> None:
    """A multiclass test set (``uniform`` or ``separated``) of ``test_size`` prompts."""
    from onenn.maths.prompts import make_test_set

    named = {"test_set": test_set, "size": test_size, "d": d, "N": N, "K": K, "delta": delta, "seed": seed}
    save_arrays(output, named, **make_test_set(test_set, test_size, d, N, K, delta, seed))
    log.info("wrote %s test set: %d prompts", test_set, test_size)


def binary_set_job(
    test_set: str, prompts: int, d: int, N: int, labels: str, delta: float | None, seed: int, output: str, log: Logger
) -> None:
    """A binary prompt set of ``prompts`` prompts: the fixed training set (test set ``train``) or a test set."""
    from onenn.maths.prompts import make_binary_set

    named = {"test_set": test_set, "size": prompts, "d": d, "N": N, "labels": labels, "delta": delta, "seed": seed}
    save_arrays(output, named, **make_binary_set(test_set, prompts, d, N, labels, delta, seed))
    log.info("wrote binary %s set: %d prompts, d=%d, N=%d, %s labels", test_set, prompts, d, N, labels)
