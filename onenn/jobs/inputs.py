"""The loaders of the workflow's intermediate files, each checking what it reads before a job computes; any failure
is ``DamagedFile`` (docs/reliability.md#damaged-files). No torch and no pandas at import time."""

import json
import os
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np

from onenn.base.io import IDENTITY, DamagedFile, load_arrays, load_json, load_table, verify_checksum

#: the arrays of a run's ``weights.npz``: the saved steps (S,), the weights saved there ``W`` (S, D, D) and the
#: minibatch loss of every step; the training jobs write exactly these
WEIGHTS_ARRAYS = ("saved_steps", "W", "minibatch_loss")
PathLike = str | os.PathLike
#: what a kind of array must hold: numpy dtype kinds
REAL, INTEGER = "f", "iu"


def load_named(path: PathLike, names: Sequence[str], expected: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The arrays ``names`` of an ``.npz`` whose ``IDENTITY`` (if it has one: older files do not) agrees with
    ``expected`` on the keys both hold."""
    arrays = load_arrays(path, verify=False)
    try:
        said = dict(json.loads(str(arrays.pop(IDENTITY, "{}"))))
    except (ValueError, TypeError):
        raise DamagedFile(path, f"array {IDENTITY!r} does not say what the file is (a JSON object)") from None
    missing = [n for n in names if n not in arrays]
    if missing:
        held, wanted = ", ".join(map(repr, arrays)) or "no arrays", ", ".join(map(repr, names))
        raise DamagedFile(path, f"{missing_ones(missing, 'array')} (it holds {held}; expected {wanted})")
    differ = [k for k, v in expected.items() if k in said and not same_value(said[k], v)]
    if differ:
        says, wants = (", ".join(f"{k} {of[k]!r}" for k in differ) for of in (said, expected))
        raise DamagedFile(path, f"it is another file: it says it is of {says}, where this job reads the one of {wants}")
    return arrays


def missing_ones(names: Sequence[str], noun: str) -> str:
    """``the array 'W' is missing``, ``the keys 'd', 'N' are missing``."""
    if len(names) == 1:
        return f"the {noun} {names[0]!r} is missing"
    return f"the {noun}s {', '.join(map(repr, names))} are missing"


def checked_array(
    path: PathLike, arrays: Mapping[str, np.ndarray], name: str, kinds: str, shape: Sequence[int | None], dims: str
) -> np.ndarray:
    """``arrays[name]``, of a dtype kind in ``kinds`` and of ``shape`` (``None``: any length), which ``dims``
    spells, e.g. ``(n, N+1, d)``."""
    a = arrays[name]
    if a.dtype.kind not in kinds:
        expected = "real numbers" if kinds == REAL else "integers"
        raise DamagedFile(path, f"array {name!r} has dtype {a.dtype}, expected {expected}")
    if a.ndim != len(shape) or any(want is not None and got != want for got, want in zip(a.shape, shape)):
        wanted = "(" + ", ".join("any" if s is None else str(s) for s in shape) + (",)" if len(shape) == 1 else ")")
        raise DamagedFile(path, f"array {name!r} has shape {a.shape}, expected {dims} = {wanted}")
    return a


def require_finite(path: PathLike, name: str, a: np.ndarray) -> None:
    bad = ~np.isfinite(a)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        message = f"holds {int(bad.sum())} non-finite values (NaN or infinite), the first at index {first}"
        raise DamagedFile(path, f"array {name!r} {message}")


def require_range(path: PathLike, name: str, a: np.ndarray, stop: int, what: str) -> None:
    """Every value of ``a`` in ``[0, stop)``."""
    if a.size and (a.min() < 0 or a.max() >= stop):
        raise DamagedFile(path, f"array {name!r} has values outside [0, {stop}) ({what}): {a.min()} to {a.max()}")


def same_value(a: Any, b: Any) -> bool:
    """Equal settings: numbers by value (``3`` and ``3.0``), anything else exactly."""
    numbers = isinstance(a, Real) and isinstance(b, Real) and not isinstance(a, bool) and not isinstance(b, bool)
    return float(a) == float(b) if numbers else a == b


def load_run_record(
    path: PathLike, identity: Mapping[str, Any], settings: Mapping[str, Any], needed: Sequence[str] = ()
) -> dict[str, Any]:
    """A run record (``run.json``) of the run asking for it: its ``identity`` and ``settings`` match the job's
    (compared as text) and the ``needed`` keys are present."""
    record = load_json(path, verify=False)
    if not isinstance(record, dict):
        raise DamagedFile(path, f"it holds a JSON {type(record).__name__}, not a run record (a JSON object)")
    missing = [k for k in dict.fromkeys([*identity, *settings, *needed]) if k not in record]
    if missing:
        raise DamagedFile(path, f"{missing_ones(missing, 'key')} (a run record has them all)")
    differ = [f"{k} is {record[k]!r}, not {v!r}" for k, v in identity.items() if str(record[k]) != str(v)]
    differ += [f"{k} is {record[k]!r}, not {v!r}" for k, v in settings.items() if not same_value(record[k], v)]
    if differ:
        raise DamagedFile(path, f"it is the record of another run: {'; '.join(differ)} (the settings of this job)")
    verify_checksum(path)
    return record


def load_weights(path: PathLike, record: Mapping[str, Any], D: int) -> dict[str, np.ndarray]:
    """A run's saved weights checked against its ``record``: its run and settings, ``WEIGHTS_ARRAYS``, steps 0 to the
    last (or to before divergence), finite ``W`` (S, D, D) and a finite minibatch loss for every step trained."""
    arrays = load_named(path, WEIGHTS_ARRAYS, record)
    saved_name, W_name, loss_name = WEIGHTS_ARRAYS
    saved_steps = checked_array(path, arrays, saved_name, INTEGER, (None,), "(S,)")
    W = checked_array(path, arrays, W_name, REAL, (len(saved_steps), D, D), "(S, D, D)")
    losses = checked_array(path, arrays, loss_name, REAL, (None,), "(steps,)")
    if len(saved_steps) == 0 or saved_steps[0] != 0 or np.any(np.diff(saved_steps) <= 0):
        raise DamagedFile(path, f"its saved steps {saved_steps.tolist()} do not rise from 0")
    diverged = int(record.get("diverged_step", -1))
    trained = diverged if diverged >= 0 else int(record["steps"])
    last_saved = saved_steps[-1] == trained if diverged < 0 else saved_steps[-1] < diverged
    if not last_saved or len(losses) != trained:
        raise DamagedFile(
            path,
            f"it holds {len(losses)} steps saved up to step {saved_steps[-1]}, but its run record says the run "
            + (f"diverged at step {diverged}" if diverged >= 0 else f"has {trained} steps")
            + ": the weights and the record are of different runs",
        )
    bad_W = ~np.isfinite(W).all(axis=(1, 2))
    if bad_W.any():
        at = ", ".join(str(s) for s in saved_steps[bad_W][:5]) + (" ..." if bad_W.sum() > 5 else "")
        message = f"holds non-finite values (NaN or infinite) in the weights saved at step {at}"
        raise DamagedFile(path, f"array {W_name!r} {message}")
    require_finite(path, loss_name, losses)
    verify_checksum(path)
    return arrays


def load_prompt_set(
    path: PathLike, names: Sequence[str], *, n: int, N: int, d: int, K: int | None, named: Mapping[str, Any] = {}
) -> dict[str, np.ndarray]:
    """A checked prompt set of ``n`` prompts (context ``N``, dimension ``d``, what ``named`` says) with arrays
    ``names``: ``x`` finite, labels in ``[0, K)`` (finite reals when ``K`` is ``None``), 1-NN index in ``[0, N)``."""
    arrays = load_named(path, names, {"size": n, "N": N, "d": d, "K": K, **named})
    x_name, labels_name, nn_name = names
    require_finite(path, x_name, checked_array(path, arrays, x_name, REAL, (n, N + 1, d), "(n, N+1, d)"))
    labels = checked_array(path, arrays, labels_name, REAL if K is None else INTEGER, (n, N), "(n, N)")
    if K is None:
        require_finite(path, labels_name, labels)
    else:
        require_range(path, labels_name, labels, K, f"the classes of K={K}")
    nn = checked_array(path, arrays, nn_name, INTEGER, (n,), "(n,)")
    require_range(path, nn_name, nn, N, f"context positions of N={N}")
    verify_checksum(path)
    return arrays


#: what a column of a table must be: present (``ANY``) or of a numeric type (``NUMBER``)
ANY, NUMBER = "any", "number"


def load_checked_table(path: PathLike, columns: Mapping[str, str] | None = None):
    """A Parquet table with ``columns`` (name -> ``ANY`` or ``NUMBER``), as a pandas DataFrame."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    table = load_table(path, verify=False)
    columns = columns or {}
    missing = [c for c in columns if c not in table]
    if missing:
        names = ", ".join(map(str, table.columns[:12])) + (" ..." if len(table.columns) > 12 else "")
        raise DamagedFile(path, f"{missing_ones(missing, 'column')} (it has {len(table.columns)} columns: {names})")
    for name, kind in columns.items():
        if kind == NUMBER and (not is_numeric_dtype(table[name]) or is_bool_dtype(table[name])):
            raise DamagedFile(path, f"column {name!r} has type {table[name].dtype}, expected numbers")
    verify_checksum(path)
    return table
