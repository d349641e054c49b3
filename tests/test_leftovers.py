"""Folders and shared memory of runnerkit processes that died are swept; those of live processes
and anything not named by runnerkit stay."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from runnerkit._leftovers import owned_tempdir, shared_memory_prefix, sweep


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_what_dead_processes_left_is_swept_and_nothing_else(tmp_path: Path) -> None:
    temp, shm = tmp_path / "tmp", tmp_path / "shm"
    temp.mkdir()
    shm.mkdir()
    dead = dead_pid()
    orphans = [temp / f"runnerkit-metrics.pid{dead}-a1b2_c3", temp / f"runnerkit-triton_runner.pid{dead}-zz"]
    for folder in orphans:
        (folder / "models" / "m").mkdir(parents=True)
        (folder / "models" / "m" / "file").write_text("x")
    orphan_memory = shm / f"runnerkit_{dead}_0_digits_onnx_0_0"
    orphan_memory.write_bytes(b"\0" * 16)
    kept = [
        temp / f"runnerkit-live.pid{os.getpid()}-abc",  # this process
        temp / "runnerkit-init.pid1-abc",  # pid 1 lives
        temp / "runnerkit-bench-1234abcd",  # not named by owned_tempdir
        temp / f"someone-else.pid{dead}-abc",
        shm / f"runnerkit_{os.getpid()}_3_x",
        shm / f"other_{dead}_0_x",
    ]
    for path in kept:
        if path.parent == temp:
            path.mkdir()
        else:
            path.write_bytes(b"\0")
    outside = tmp_path / "outside"
    outside.mkdir()
    (temp / f"runnerkit-link.pid{dead}-abc").symlink_to(outside, target_is_directory=True)

    removed = sweep(temp, shm)

    assert sorted(removed) == sorted([*orphans, orphan_memory])
    assert all(path.exists() for path in kept)
    assert outside.is_dir() and (temp / f"runnerkit-link.pid{dead}-abc").is_symlink()
    assert sweep(temp, shm) == []


def test_names_made_here_are_recognised_by_the_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = owned_tempdir("metrics")
    assert folder.parent == tmp_path and folder.name.startswith(f"runnerkit-metrics.pid{os.getpid()}-")
    memory = tmp_path / (shared_memory_prefix(7) + "model_0_0")
    memory.write_bytes(b"\0")
    assert sweep(tmp_path, tmp_path) == []  # ours, and we live
    renamed = folder.with_name(folder.name.replace(f"pid{os.getpid()}", f"pid{dead_pid()}"))
    folder.rename(renamed)
    assert sweep(tmp_path, tmp_path) == [renamed]
