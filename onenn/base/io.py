"""Atomic writes with a SHA-256 beside each file (``<file>.sha256``, ``sha256sum -c`` reads it), arrays without
pickle, and reads that fail with ``DamagedFile`` naming the rule that remakes the file (docs/reliability.md)."""

import errno
import hashlib
import json
import logging
import os
import shlex
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from onenn.base.columns import check_described
from onenn.base.paths import rules_making

CHECKSUM_SUFFIX = ".sha256"
#: where a read without a checksum is reported: a child of the job's log (onenn.jobs.logs)
LOG = logging.getLogger(__name__)
#: the errors of a file system that cannot take a file: full, over quota, read-only, not ours, too big
CANNOT_WRITE = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG}
#: the key of a Parquet field's metadata that holds what the column means
DESCRIPTION = b"description"
#: the array of an ``.npz`` that says what it is: a JSON object (a test set's settings, a run's identity and settings)
IDENTITY = "identity"


class DamagedFile(ValueError):
    """A file a job reads is unreadable, incomplete, not what the job expects, or changed since its job wrote it."""

    def __init__(self, path: str | os.PathLike, problem: str):
        self.path, self.problem = os.fspath(path), problem
        rules = rules_making(self.path)
        if not rules:
            message = f"{self.path} is damaged: {problem}. The workflow does not make this file; restore it."
        else:
            made_by = rules[0] + "".join(f" (in a binary experiment: {rule})" for rule in rules[1:])
            message = (
                f"{self.path} is damaged: {problem}. It is made by rule {made_by}; remake it, and what depends on it,"
                f" with\n    snakemake --cores all --forcerun {shlex.quote(self.path)}\n"
                "(with the --configfile's, or the profile, of your run)."
            )
        super().__init__(message)


class CannotWrite(OSError):
    """An output could not be written (a full disk, a read-only folder); nothing of it was left behind."""


def checksum_path(path: str | os.PathLike) -> Path:
    return Path(os.fspath(path) + CHECKSUM_SUFFIX)


def file_digest(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def verify_checksum(path: str | os.PathLike) -> bool:
    """``True`` if ``path`` matches its recorded checksum, ``DamagedFile`` if not; with none recorded (moved without
    it), ``False`` and a warning in the job's log: it is read unverified."""
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


def flush(tmp: Path) -> None:
    """Put ``tmp`` on the disk (before its name: a node may crash) with the permissions of a new file."""
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes it private; results are shared like any file


def write_with(path: str | os.PathLike, writer: Callable[[Path], Any]) -> None:
    """Call ``writer(tmp)`` on a temp path beside ``path``, then rename it and its checksum into place, or on an error
    delete both (``CannotWrite`` on a full disk or a read-only folder)."""
    path, sidecar = Path(path), checksum_path(path)
    temporary: list[Path] = []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for target in (path, sidecar):  # hidden, beside their targets: .{name}.*.tmp{suffix}
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp" + target.suffix, dir=path.parent)
            os.close(fd)
            temporary.append(Path(tmp))
        writer(temporary[0])
        flush(temporary[0])
        temporary[1].write_text(f"{file_digest(temporary[0])}  {path.name}\n")
        flush(temporary[1])
        sidecar.unlink(missing_ok=True)
        os.replace(temporary[0], path)
        os.replace(temporary[1], sidecar)
    except OSError as err:
        if err.errno not in CANNOT_WRITE:
            raise
        raise CannotWrite(
            err.errno,
            f"could not write {path}: {os.strerror(err.errno)}. Nothing of it was left behind, and the files already "
            f"there are unchanged; free space on the file system of {path.parent} (or make it writable) and run "
            "snakemake again",
        ) from err
    finally:
        for tmp in temporary:
            tmp.unlink(missing_ok=True)


def save_arrays(path: str | os.PathLike, named: Mapping[str, Any] | None = None, **arrays: np.ndarray) -> None:
    """``np.savez`` atomically (no pickle: object arrays are refused); ``named``, what the file is, as ``IDENTITY``."""
    if named is not None:
        arrays[IDENTITY] = np.array(json.dumps(named, sort_keys=True))
    for name, a in arrays.items():
        if np.asarray(a).dtype == object:
            raise TypeError(f"array {name!r} has dtype object, which cannot be stored without pickle")

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    write_with(path, write)


def save_json(path: str | os.PathLike, obj: Any) -> None:
    write_with(path, lambda tmp: tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n"))


def save_table(path: str | os.PathLike, frame, descriptions: Mapping[str, str] | None = None) -> None:
    """A pandas DataFrame to Parquet, atomically; each column's description (``onenn.jobs.columns``) goes into its
    field's metadata ``{b"description": ...}``, and a column without one is refused (``Undescribed``)."""
    import pyarrow as pa  # here, not at the top: the Snakefile imports this module
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    if descriptions is not None:
        check_described(frame.columns, descriptions, os.fspath(path))
        fields = [f.with_metadata({DESCRIPTION: descriptions[f.name].encode()}) for f in table.schema]
        table = pa.Table.from_arrays(table.columns, schema=pa.schema(fields, metadata=table.schema.metadata))
    write_with(path, lambda tmp: pq.write_table(table, tmp))


def read(path: str | os.PathLike, what: str, reader: Callable[[], Any], broken: tuple, verify: bool) -> Any:
    """``reader()``, any of the errors ``broken`` as ``DamagedFile`` (the file missing, or not a readable ``what``);
    then, unless ``verify=False`` (the loaders of onenn.jobs.inputs verify last), the checksum."""
    try:
        out = reader()
    except DamagedFile:
        raise
    except broken as err:
        if isinstance(err, FileNotFoundError):
            raise DamagedFile(path, "it is missing") from None
        raise DamagedFile(path, f"it is not a readable {what} ({type(err).__name__}: {str(err).rstrip('.')})") from None
    if verify:
        verify_checksum(path)
    return out


def load_arrays(path: str | os.PathLike, *, verify: bool = True) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` written by ``save_arrays``, refusing pickled content."""

    def reader() -> dict[str, np.ndarray]:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise DamagedFile(path, "it holds a single .npy array, not an .npz archive of named arrays")
        with data:
            return {k: data[k] for k in data.files}  # reads every array: a bad CRC-32 shows here

    return read(path, ".npz archive", reader, (OSError, ValueError, EOFError, zipfile.BadZipFile), verify)


def load_json(path: str | os.PathLike, *, verify: bool = True) -> Any:
    # JSONDecodeError and UnicodeDecodeError are ValueErrors; nesting deeper than Python's stack, a RecursionError
    broken = (OSError, ValueError, RecursionError)
    return read(path, "JSON file", lambda: json.loads(Path(path).read_text()), broken, verify)


def load_table(path: str | os.PathLike, *, verify: bool = True):
    """A Parquet table written by ``save_table``, as a pandas DataFrame."""
    import pandas as pd  # here, not at the top: the Snakefile imports this module
    import pyarrow as pa

    reader = lambda: pd.read_parquet(path, engine="pyarrow")
    return read(path, "Parquet file", reader, (OSError, ValueError, pa.ArrowException), verify)


def load_text(path: str | os.PathLike, *, verify: bool = True) -> str:
    """A text file the workflow wrote (the Markdown of a table)."""
    return read(path, "UTF-8 text file", lambda: Path(path).read_text(encoding="utf-8"), (OSError, ValueError), verify)
