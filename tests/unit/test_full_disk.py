"""A job that cannot write its output, on a full file system (a small tmpfs) or into a read-only folder, fails
with ``CannotWrite`` naming the file and what to do, leaves no partial file, and the results already there stay
as they were, checksums included. The tmpfs needs the right to mount (root in a container); without it the test
falls back to a read-only folder, and skips where neither can fail a write (root ignores file permissions)."""

import errno
import logging
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from onenn.base import paths
from onenn.base.io import CannotWrite, checksum_path, save_arrays
from onenn.jobs import datasets
from onenn.jobs.inputs import load_prompt_set
from onenn.jobs.logs import job_log
from onenn.maths.prompts import SET_ARRAYS

LOG = logging.getLogger("test")
D, N, K = 8, 16, 3
SMALL, LARGE = 16, 4096  # prompts: about 20 KB and about 4.5 MB of float64


def mount_tmpfs(folder: Path, size: str) -> str | None:
    """Mount a tmpfs of ``size`` on ``folder``; the reason when that is not allowed here."""
    if shutil.which("mount") is None:
        return "no mount command"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=False, capture_output=True
    )
    return None if done.returncode == 0 else f"mount -t tmpfs is not allowed here: {done.stderr.decode().strip()}"


def fill(folder: Path) -> None:
    """Write a filler file until the file system is full."""
    with open(folder / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as err:
            assert err.errno == errno.ENOSPC


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def read_only(folders: list[Path], mode: int) -> None:
    for folder in folders:
        folder.chmod(mode)


@pytest.fixture
def unwritable(tmp_path):
    """A folder holding an earlier result (a test set and its checksum) that takes no new file: a full tmpfs, or
    where mounting is not allowed, read-only folders. Yields (the error expected, the folder, the earlier result)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    why_not = mount_tmpfs(folder, "1m")
    earlier = folder / paths.UNIFORM_SET.format(d=D, N=N, K=K, size=SMALL)
    datasets.test_set_job("uniform", SMALL, D, N, K, None, 0, str(earlier), log=LOG)
    if why_not is None:
        fill(folder)
        yield "No space left on device", folder, earlier
        subprocess.run(["umount", str(folder)], check=True)
        return
    folders = [p for p in earlier.parents if p.is_relative_to(folder)]
    read_only(folders, 0o555)
    try:
        if os.access(earlier.parent, os.W_OK):  # root writes into read-only folders
            pytest.skip(f"{why_not}; and this user (uid {os.geteuid()}) can write into read-only folders")
        yield "Permission denied", folder, earlier
    finally:
        read_only(folders, 0o755)


def test_a_job_that_cannot_write_fails_clearly_and_leaves_the_earlier_results(unwritable, tmp_path):
    problem, folder, earlier = unwritable
    before = files(folder)
    new = folder / paths.UNIFORM_SET.format(d=D, N=N, K=K, size=LARGE)
    for target in (new, earlier):  # a new output, and a rewrite of an earlier one
        log_file = tmp_path / "job.log"
        with pytest.raises(CannotWrite) as err, job_log(str(log_file)) as log:
            datasets.test_set_job("uniform", LARGE, D, N, K, None, 0, str(target), log=log)
        assert str(err.value) == (
            f"[Errno {err.value.errno}] could not write {target}: {problem}. Nothing of it was left behind, and the "
            f"files already there are unchanged; free space on the file system of {target.parent} (or make it "
            "writable) and run snakemake again"
        )
        assert "CannotWrite: [Errno" in log_file.read_text()
        assert files(folder) == before  # no partial output, no temporary file, the earlier result as it was
    arrays = load_prompt_set(earlier, SET_ARRAYS, n=SMALL, N=N, d=D, K=K)  # and it still matches its checksum
    assert checksum_path(earlier).exists() and arrays["x"].shape == (SMALL, N + 1, D)


def test_room_for_a_file_but_not_its_checksum_leaves_the_earlier_file(tmp_path):
    """Everything that takes space is written before anything is renamed: a disk with room for the new file but
    not for its checksum leaves the earlier file and its checksum as they were."""
    folder = tmp_path / "disk"
    folder.mkdir()
    why_not = mount_tmpfs(folder, "256k")
    if why_not:
        pytest.skip(why_not)
    try:
        target = folder / "a.npz"
        save_arrays(target, x=np.zeros(10))
        before = files(folder)
        fill(folder)
        page = os.statvfs(folder).f_frsize
        os.truncate(folder / "filler", (folder / "filler").stat().st_size // page * page - 8 * page)
        free = os.statvfs(folder).f_bavail * page
        with pytest.raises(CannotWrite, match=f"could not write {target}: No space left on device"):
            save_arrays(target, x=np.zeros((free - 1024) // 8))  # fills the free pages, but for its last few bytes
        assert {k: v for k, v in files(folder).items() if k != "filler"} == before
    finally:
        subprocess.run(["umount", str(folder)], check=True)
