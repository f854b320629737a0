"""Atomic writes with checksums, and reads that check them.

Every output is written to a temporary name in its folder and renamed into place, so an interrupted job never
leaves a file that looks complete; arrays are stored without pickle. Beside every output lies its SHA-256 checksum,
``<file>.sha256`` (the format of ``sha256sum``, so ``sha256sum -c`` checks it too), and the loaders verify it: a
file damaged after its job wrote it fails where it is read, with ``DamagedFile``, which names the file, what is
wrong, the rule that makes it and the command that remakes it (docs/reliability.md#damaged-files).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shlex
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from onenn.base.columns import check_described
from onenn.base.paths import rules_making

#: the suffix of a file's checksum, beside it
CHECKSUM_SUFFIX = ".sha256"
#: where a read without a checksum is reported: a child of the job's log (onenn.jobs.logs)
LOG = logging.getLogger(__name__)


class DamagedFile(ValueError):
    """A file a job reads is unreadable, incomplete, not what the job expects, or changed since its job wrote it.
    The message names the file, what is wrong, the rule that makes it and the command that remakes it."""

    def __init__(self, path: str | os.PathLike, problem: str):
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(damage_report(self.path, problem))


def damage_report(path: str, problem: str) -> str:
    """``<path> is damaged: <problem>. It is made by rule <rule>; remake it ...``"""
    rules = rules_making(path)
    if not rules:
        return f"{path} is damaged: {problem}. The workflow does not make this file; restore it."
    made_by = rules[0] + "".join(f" (in a binary experiment: {rule})" for rule in rules[1:])
    return (
        f"{path} is damaged: {problem}. It is made by rule {made_by}; remake it, and what depends on it, with\n"
        f"    snakemake --cores all --forcerun {shlex.quote(path)}\n"
        "(with the --configfile's, or the profile, of your run)."
    )


# --------------------------------------------------------------------------------------------------------
# Checksums
# --------------------------------------------------------------------------------------------------------


def checksum_path(path: str | os.PathLike) -> Path:
    """Where the checksum of ``path`` lies: ``<path>.sha256``."""
    path = Path(path)
    return path.with_name(path.name + CHECKSUM_SUFFIX)


def file_digest(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_checksum(path: str | os.PathLike) -> bool:
    """Check ``path`` against its recorded checksum: ``DamagedFile`` if they differ, ``True`` if it matches. With
    none recorded (a file written before checksums were, or moved without it by a ``shadow:`` rule or a storage
    plugin), ``False`` and a warning in the job's log naming the file: it is read unverified."""
    sidecar = checksum_path(path)
    try:
        recorded = sidecar.read_text().split(maxsplit=1)[0]
    except (FileNotFoundError, IndexError):
        LOG.warning(
            "%s has no checksum beside it (%s missing or empty): read without checking that it is what its job "
            "wrote. Remaking it writes one.",
            path,
            sidecar.name,
        )
        return False
    if file_digest(path) != recorded:
        raise DamagedFile(
            path,
            f"its contents changed since its job wrote it (its SHA-256 differs from the one recorded then, in "
            f"{sidecar.name}; it is {Path(path).stat().st_size} bytes)",
        )
    return True


def temporary_beside(path: Path) -> Path:
    """A new, empty hidden file ``.{name}.*.tmp{suffix}`` in the folder of ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent)
    os.close(fd)
    return Path(tmp)


def flush(tmp: Path) -> None:
    """Put ``tmp`` on the disk and give it the permissions of a new file."""
    with open(tmp, "rb+") as f:  # the data reaches the disk before the name does (a node may crash)
        os.fsync(f.fileno())
    os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes it private; results are shared like any file


# --------------------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------------------


#: the errors of a file system that cannot take a file: full, over quota, read-only, not ours, too big
CANNOT_WRITE = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG}


class CannotWrite(OSError):
    """An output could not be written (a full disk, a read-only folder); nothing of it was left behind."""


def reraise_as_cannot_write(path: Path, err: OSError) -> None:
    """Raise ``err`` as ``CannotWrite`` naming ``path`` if a file system could not take the file, else as is."""
    if err.errno not in CANNOT_WRITE:
        raise err
    raise CannotWrite(
        err.errno,
        f"could not write {path}: {os.strerror(err.errno)}. Nothing of it was left behind, and the files already "
        f"there are unchanged; free space on the file system of {path.parent} (or make it writable) and run "
        "snakemake again",
    ) from err


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success put it on the disk, with its checksum beside it, and
    rename both into place; on failure delete them. A killed process leaves at most hidden ``.{name}.*.tmp*``
    files, never ``path``; a full disk or a read-only folder fails with ``CannotWrite`` and leaves the files that
    were there as they were (everything that takes space is written before anything is renamed).

    The old checksum is removed before the new file takes the name, and the new one put in place after: at every
    moment the checksum beside a file is its own, or there is none (which the loaders accept)."""
    path = Path(path)
    temporary: list[Path] = []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.append(temporary_beside(path))
        yield temporary[0]
        flush(temporary[0])
        sidecar = checksum_path(path)
        temporary.append(temporary_beside(sidecar))
        temporary[1].write_text(f"{file_digest(temporary[0])}  {path.name}\n")
        flush(temporary[1])
        sidecar.unlink(missing_ok=True)
        os.replace(temporary[0], path)
        os.replace(temporary[1], sidecar)
    except OSError as err:
        reraise_as_cannot_write(path, err)
    finally:
        for tmp in temporary:
            tmp.unlink(missing_ok=True)


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


def save_json(path: str | os.PathLike, obj: Any) -> None:
    write_with(path, lambda tmp: tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n"))


#: the key of a Parquet field's metadata that holds what the column means
DESCRIPTION = b"description"


def save_table(path: str | os.PathLike, frame, descriptions: Mapping[str, str] | None = None) -> None:
    """Write a pandas DataFrame to Parquet with pyarrow, atomically. With ``descriptions`` (``{column: one line}``,
    ``onenn.jobs.columns``), each column's goes into the schema as its field's metadata ``{b"description": ...}``
    (``pyarrow.parquet.read_schema(path).field(name).metadata``); a column without one is refused with
    ``Undescribed``, before anything is written. The same frame and descriptions give the same bytes."""
    import pyarrow as pa  # here, not at the top: the Snakefile imports this module
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    if descriptions is not None:
        check_described(frame.columns, descriptions, os.fspath(path))
        fields = [f.with_metadata({DESCRIPTION: descriptions[f.name].encode()}) for f in table.schema]
        table = pa.Table.from_arrays(table.columns, schema=pa.schema(fields, metadata=table.schema.metadata))
    write_with(path, lambda tmp: pq.write_table(table, tmp))


# --------------------------------------------------------------------------------------------------------
# Reading: the container opens, and (unless ``verify=False``: the loaders of onenn.jobs.inputs verify it
# last, after the checks that say more) the file matches its checksum. Every failure is ``DamagedFile``.
# --------------------------------------------------------------------------------------------------------


def unreadable(path: str | os.PathLike, what: str, err: BaseException) -> DamagedFile:
    if isinstance(err, FileNotFoundError):
        return DamagedFile(path, "it is missing")
    return DamagedFile(path, f"it is not a readable {what} ({type(err).__name__}: {str(err).rstrip('.')})")


def load_arrays(path: str | os.PathLike, *, verify: bool = True) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` written by ``save_arrays``, refusing pickled content."""
    broken = (OSError, ValueError, EOFError, zipfile.BadZipFile)  # what numpy and zipfile raise on damage
    try:
        data = np.load(path, allow_pickle=False)
    except broken as err:
        raise unreadable(path, ".npz archive", err) from None  # the message says what numpy said
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise DamagedFile(path, "it holds a single .npy array, not an .npz archive of named arrays")
    try:
        with data:
            arrays = {k: data[k] for k in data.files}  # reads every array: a bad CRC-32 shows here
    except broken as err:
        raise unreadable(path, ".npz archive", err) from None  # the message says what numpy said
    if verify:
        verify_checksum(path)
    return arrays


def load_json(path: str | os.PathLike, *, verify: bool = True) -> Any:
    try:
        obj = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise unreadable(path, "JSON file", err) from None
    if verify:
        verify_checksum(path)
    return obj


def load_table(path: str | os.PathLike, *, verify: bool = True):
    """A Parquet table written by ``save_table``, as a pandas DataFrame."""
    import pandas as pd  # here, not at the top: the Snakefile imports this module
    import pyarrow as pa

    try:
        table = pd.read_parquet(path, engine="pyarrow")
    except (OSError, ValueError, pa.ArrowException) as err:
        raise unreadable(path, "Parquet file", err) from None
    if verify:
        verify_checksum(path)
    return table


def load_text(path: str | os.PathLike, *, verify: bool = True) -> str:
    """A text file the workflow wrote (the Markdown of a table)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, ValueError) as err:
        raise unreadable(path, "UTF-8 text file", err) from None
    if verify:
        verify_checksum(path)
    return text
