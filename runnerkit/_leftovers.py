"""Temporary folders and shared memory named after the process that made them, and the sweep that
removes those whose process has died.

A process that is killed (SIGKILL, the OOM killer, a power cut of its container) cleans nothing
up: its shadow repository, its metrics folder and the python backend's shared-memory regions
stay. The next runnerkit process of the same user removes them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

logger = logging.getLogger("runnerkit")

# runnerkit-<kind>.pid<pid>-<mkdtemp's suffix>; /dev/shm/runnerkit_<pid>_<n>_<triton's name>
_FOLDER = re.compile(r"runnerkit-[A-Za-z0-9_]+\.pid(?P<pid>\d+)-[A-Za-z0-9_]+")
_SHARED_MEMORY = re.compile(r"runnerkit_(?P<pid>\d+)_\d+_.*")
SHARED_MEMORY_DIR = Path("/dev/shm")


def owned_tempdir(kind: str) -> Path:
    """A new temporary folder that names this process as its owner (see `sweep`)."""
    return Path(tempfile.mkdtemp(prefix=f"runnerkit-{kind}.pid{os.getpid()}-"))


def shared_memory_prefix(serial: int) -> str:
    """The prefix of shared-memory regions that name this process as their owner."""
    return f"runnerkit_{os.getpid()}_{serial}_"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _ours_and_orphaned(path: Path, pattern: re.Pattern[str]) -> bool:
    match = pattern.fullmatch(path.name)
    if match is None:
        return False
    try:
        if path.lstat().st_uid != os.getuid():
            return False
    except OSError:
        return False
    return not _alive(int(match["pid"]))


def sweep(temp_dir: Path | None = None, shared_memory_dir: Path = SHARED_MEMORY_DIR) -> list[Path]:
    """Remove this user's runnerkit folders and shared memory whose process has died; what went."""
    removed: list[Path] = []
    folders = Path(temp_dir or tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for path in folders.glob("runnerkit-*"):
            if path.is_dir() and not path.is_symlink() and _ours_and_orphaned(path, _FOLDER):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    with contextlib.suppress(OSError):
        for path in shared_memory_dir.glob("runnerkit_*"):
            if _ours_and_orphaned(path, _SHARED_MEMORY):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path)
    if removed:
        logger.info(
            "removed %d temporary folder(s) and shared-memory region(s) left by runnerkit processes "
            "that were killed: %s",
            len(removed),
            ", ".join(p.name for p in removed[:5]) + (" ..." if len(removed) > 5 else ""),
        )
    return removed
