"""Settings read from the environment; constructor arguments always win over these."""

from __future__ import annotations

import os
from pathlib import Path

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


def env_flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() in TRUE_WORDS


def runnerkit_home() -> Path:
    """`$RUNNERKIT_HOME`, default `~/runnerkit`: the bento store and caches live here."""
    return Path(os.environ.get("RUNNERKIT_HOME") or Path.home() / "runnerkit").expanduser()


def cache_dir(*parts: str) -> Path:
    path = runnerkit_home().joinpath("cache", *parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
