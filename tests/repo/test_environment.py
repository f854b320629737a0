"""The set-up: the README's two commands, CI running the README's test command word for word, and the lock
(requirements.lock: every package at an exact version with hashes, torch's own dependencies included, torch not)."""

import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
MAIN, TESTS = " && snakemake --cores all", " && python -m pytest"
#: torch's own dependencies, which the lock must pin although it leaves torch out
TORCH_DEPENDENCIES = (
    "filelock",
    "sympy",
    "mpmath",
    "networkx",
    "jinja2",
    "markupsafe",
    "fsspec",
    "typing-extensions",
    "setuptools",
)


def bash_lines(path: Path) -> list[str]:
    """The lines of a Markdown file's ``bash`` code blocks."""
    blocks = re.findall(r"^```bash\n(.*?)^```", path.read_text(), re.DOTALL | re.MULTILINE)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def readme_commands() -> list[str]:
    return bash_lines(ROOT / "README.md")


def the_command(suffix: str) -> str:
    found = [line for line in readme_commands() if line.endswith(suffix)]
    assert len(found) == 1, f"the README should have one command ending with {suffix!r}: {found}"
    return found[0]


def test_ci_runs_the_readme_test_command_word_for_word():
    assert the_command(TESTS) in (ROOT / ".ci/run").read_text().splitlines()


def test_both_readme_commands_set_up_the_same_way_from_the_lock():
    setup = the_command(MAIN).removesuffix(MAIN)
    assert setup == the_command(TESTS).removesuffix(TESTS)
    script = re.fullmatch(r"(?:bash )?(\S+)", setup)[1]
    text = (ROOT / script).read_text()
    assert "--require-hashes -r requirements.lock" in text and "-r workflow/envs/torch.txt" in text


def locked() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) of every package of the lock."""
    entries = {}
    for entry in re.split(r"\n(?=\S)", LOCK.read_text()):
        if entry.startswith("#") or not entry.strip():
            continue
        head = re.match(r"([A-Za-z0-9_.\-]+)==(\S+)", entry)
        assert head, f"not pinned with ==: {entry.splitlines()[0]}"
        entries[canonicalize_name(head[1])] = (head[2], re.findall(r"--hash=sha256:([0-9a-f]{64})", entry))
    return entries


def test_the_lock_pins_every_package_with_hashes_torch_left_out():
    tomllib = pytest.importorskip("tomllib")
    entries = locked()
    assert all(hashes for _, hashes in entries.values()), [name for name, (_, h) in entries.items() if not h]
    assert "torch" not in entries
    assert not [n for n in entries if n.startswith(("nvidia-", "cuda-")) or n == "triton"]  # torch's CUDA packages
    assert set(TORCH_DEPENDENCIES) <= set(entries)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["test"]
    wanted = {canonicalize_name(Requirement(r).name) for r in requirements}
    assert wanted - {"torch"} <= set(entries), sorted(wanted - set(entries))


def pinned(name: str) -> tuple[str, list[str]]:
    """The one requirement of workflow/envs/<name>.txt: its ``name==version`` and the sha256 of its hashes."""
    text = (ROOT / f"workflow/envs/{name}.txt").read_text()
    lines = [line for line in text.replace("\\\n", " ").splitlines() if line and not line.startswith("#")]
    assert len(lines) == 1, lines
    pin = re.fullmatch(rf"({name}==[0-9.]+)((?:\s+--hash=sha256:[0-9a-f]{{64}})+)", lines[0].strip())
    assert pin, f"workflow/envs/{name}.txt: {lines[0]!r} is not `{name}==X.Y.Z` with sha256 hashes"
    return pin[1], re.findall(r"[0-9a-f]{64}", pin[2])


def test_the_lock_is_made_for_the_torch_that_is_installed_and_ci_tests():
    torch, hashes = pinned("torch")
    assert len(hashes) == len(set(hashes)) >= 2  # the CPU build and PyPI's wheels
    assert torch in (ROOT / ".ci/run").read_text()  # the newest-versions step holds torch at the same version


def test_torch_and_triton_are_hash_checked_like_the_lock():
    install = (ROOT / "workflow/install.sh").read_text()
    # install_torch: the wheel that pip chooses, then installed from it against torch.txt's hashes
    assert "pip install --quiet --require-hashes --no-deps --no-index --find-links" in install
    assert len(re.findall(r"^\s+install_torch\b", install, re.MULTILINE)) == 2  # the CPU index, the default one
    assert "--require-hashes -r workflow/envs/triton.txt" in install


def test_install_knows_the_gpu_driver_files_of_train():
    """workflow/install.sh picks the CPU build of torch where none of these files is; it cannot import onenn
    (not installed yet), so it repeats onenn/training/train.py's list."""
    from onenn.training.train import GPU_DRIVER_FILES

    found = re.search(r"^GPU_DRIVER_FILES=\((.*)\)$", (ROOT / "workflow/install.sh").read_text(), re.MULTILINE)
    assert found and tuple(found[1].split()) == GPU_DRIVER_FILES


def test_the_regenerate_command_is_in_the_lock_header_and_the_install_docs():
    header = LOCK.read_text().splitlines()[:2]
    assert header[0] == "# This file was autogenerated by uv via the following command:"
    command = header[1].removeprefix("#").strip()
    assert command.startswith("uv pip compile pyproject.toml ") and "--generate-hashes" in command
    assert command in bash_lines(ROOT / "docs/install.md")


def test_triton_is_pinned_and_installed_like_torch():
    """The lock leaves triton out with torch's CUDA packages; workflow/envs/triton.txt pins the version torch's
    CUDA build requires, and workflow/install.sh (so both README commands and CI) installs it on Linux x86_64."""
    pin, _ = pinned("triton")
    install = (ROOT / "workflow/install.sh").read_text()
    assert "Linux-x86_64" in install and "-r workflow/envs/triton.txt" in install
    assert "workflow/envs/triton.txt" in (ROOT / ".ci/run").read_text()  # the newest-versions step too
    try:
        assert pin == f"triton=={version('triton')}"
    except PackageNotFoundError:
        pass  # not installed here (not Linux x86_64): the fused kernel's tests skip
