"""Atomic writes: every output is written to a temporary name in its folder and renamed into place, so an
interrupted job never leaves a file that looks complete. Arrays are stored without pickle."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success flush it to disk and rename it onto ``path``, on
    failure delete it. A killed process leaves at most a hidden ``.{name}.*.tmp{suffix}`` file, never ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as f:  # the data reaches the disk before the name does (a node may crash)
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes it private; results are shared like any file
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_with(path: str | os.PathLike, writer: Callable[[Path], Any]) -> None:
    """Call ``writer(tmp_path)`` and move the result onto ``path`` atomically."""
    with atomic_path(path) as tmp:
        writer(tmp)


def save_arrays(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    """``np.savez`` atomically (no pickle: object arrays are refused)."""
    for name, a in arrays.items():
        if np.asarray(a).dtype == object:
            raise TypeError(f"array {name!r} has dtype object, which cannot be stored without pickle")

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    write_with(path, write)


def load_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Load an ``.npz`` written by ``save_arrays``, refusing pickled content."""
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def save_json(path: str | os.PathLike, obj: Any) -> None:
    write_with(path, lambda tmp: tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n"))


def load_json(path: str | os.PathLike) -> Any:
    return json.loads(Path(path).read_text())


def save_table(path: str | os.PathLike, frame) -> None:
    """Write a pandas DataFrame to Parquet with pyarrow, atomically."""
    write_with(path, lambda tmp: frame.to_parquet(tmp, engine="pyarrow", index=False))


def load_table(path: str | os.PathLike):
    """A Parquet table written by ``save_table``, as a pandas DataFrame."""
    import pandas as pd  # here, not at the top: the Snakefile imports this module

    return pd.read_parquet(path, engine="pyarrow")
