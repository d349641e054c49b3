"""Podman configuration that works on machines without a Docker engine.

On the project's machines (root, hybrid cgroups, no ``CAP_SYS_RESOURCE``) podman's defaults do
not start a container: crun fails on the hybrid cgroups and the default ulimits (nofile 1048576)
cannot be set (``setrlimit RLIMIT_NOFILE: Operation not permitted``). runnerkit therefore writes
its own ``containers.conf`` (runc, ulimits no higher than this process's hard limits) and
``storage.conf`` (overlay, or vfs where the state directory itself sits on overlayfs, with
``runroot``/``graphroot`` under a state directory) and points podman at them through
``CONTAINERS_CONF`` / ``CONTAINERS_STORAGE_CONF`` in the environment of the podman processes it
runs.

runnerkit never writes into a user's podman configuration (``/etc/containers``,
``~/.config/containers``). :func:`podman_environment` with ``mode="auto"`` (the default) uses the
user's own set-up unchanged when there is one (``CONTAINERS_CONF`` or ``CONTAINERS_STORAGE_CONF``
already set, or a ``containers.conf``/``storage.conf`` in those folders) and runnerkit's managed
one otherwise. ``mode="managed"`` (what the tests and the stand-in base image script use) and
``mode="user"`` force one or the other.

The state directory defaults to ``$RUNNERKIT_CONTAINERS_DIR``, else ``$RUNNERKIT_HOME/containers``
(``RUNNERKIT_HOME`` defaults to ``~/runnerkit``). Images built there are only visible to podman
run with the same environment: ``python -m runnerkit.containers env`` prints the ``export`` lines.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import attrs

from runnerkit._settings import runnerkit_home

__all__ = [
    "PodmanConfigMode",
    "PodmanSettings",
    "default_state_dir",
    "podman_environment",
    "user_podman_config",
    "write_podman_config",
]

PodmanConfigMode = Literal["auto", "managed", "user"]
StorageDriver = Literal["overlay", "vfs"]

_NOFILE_CAP = 65536
_NPROC_CAP = 4096  # 32768 worked here, 65536 did not; 4096 threads is plenty for tritonserver


def default_state_dir() -> Path:
    """``$RUNNERKIT_CONTAINERS_DIR``, else ``$RUNNERKIT_HOME/containers``."""
    override = os.environ.get("RUNNERKIT_CONTAINERS_DIR")
    if override:
        return Path(override).expanduser()
    return runnerkit_home() / "containers"


def _hard_limit(kind: int, cap: int) -> int:
    _soft, hard = resource.getrlimit(kind)
    if hard == resource.RLIM_INFINITY or hard <= 0:
        return cap
    return min(hard, cap)


def _default_ulimits() -> tuple[str, ...]:
    nofile = _hard_limit(resource.RLIMIT_NOFILE, _NOFILE_CAP)
    nproc = _hard_limit(resource.RLIMIT_NPROC, _NPROC_CAP)
    return (f"nofile={nofile}:{nofile}", f"nproc={nproc}:{nproc}")


def _filesystem_type(path: Path) -> str | None:
    """The type of the mount that holds ``path`` (longest mount-point prefix in /proc/mounts)."""
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    target = str(path.resolve())
    best: tuple[int, str] | None = None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount_point = fields[1].replace("\\040", " ")
        inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
        if inside and (best is None or len(mount_point) > best[0]):
            best = (len(mount_point), fields[2])
    return best[1] if best else None


def _default_driver(state_dir: Path) -> StorageDriver:
    existing = state_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    # overlay on top of overlayfs (a state dir inside a container) does not mount: use vfs there.
    return "vfs" if _filesystem_type(existing) == "overlay" else "overlay"


def _toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@attrs.frozen
class PodmanSettings:
    """What runnerkit's managed podman configuration contains.

    ``storage_driver=None`` picks overlay, or vfs where the state directory is on overlayfs.
    An existing storage keeps the driver it was created with (podman refuses to switch), so a
    ``storage.conf`` already present in the state directory decides when the driver is not given.
    """

    state_dir: Path = attrs.field(factory=default_state_dir, converter=Path)
    storage_driver: StorageDriver | None = None
    runtime: str = "runc"
    ulimits: tuple[str, ...] = attrs.field(factory=_default_ulimits, converter=tuple)

    @property
    def containers_conf(self) -> Path:
        return self.state_dir / "containers.conf"

    @property
    def storage_conf(self) -> Path:
        return self.state_dir / "storage.conf"

    @property
    def runroot(self) -> Path:
        return self.state_dir / "run"

    @property
    def graphroot(self) -> Path:
        return self.state_dir / "storage"

    def resolved_driver(self) -> StorageDriver:
        if self.storage_driver is not None:
            return self.storage_driver
        try:
            for line in self.storage_conf.read_text().splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "driver":
                    found = value.strip().strip('"')
                    if found in ("overlay", "vfs"):
                        return "overlay" if found == "overlay" else "vfs"
        except OSError:
            pass
        return _default_driver(self.state_dir)

    def render_containers_conf(self) -> str:
        ulimits = ", ".join(_toml_str(u) for u in self.ulimits)
        return (
            "# Written by runnerkit (runnerkit.containers); rewritten when settings change.\n"
            "[containers]\n"
            f"default_ulimits = [{ulimits}]\n"
            "\n[engine]\n"
            f"runtime = {_toml_str(self.runtime)}\n"
        )

    def render_storage_conf(self) -> str:
        return (
            "# Written by runnerkit (runnerkit.containers); rewritten when settings change.\n"
            "[storage]\n"
            f"driver = {_toml_str(self.resolved_driver())}\n"
            f"runroot = {_toml_str(str(self.runroot))}\n"
            f"graphroot = {_toml_str(str(self.graphroot))}\n"
        )


def _write_if_changed(path: Path, text: str) -> None:
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_podman_config(settings: PodmanSettings | None = None) -> dict[str, str]:
    """Write runnerkit's ``containers.conf`` and ``storage.conf``; return the environment to add.

    Idempotent: files are only rewritten when their content changes. The returned mapping holds
    ``CONTAINERS_CONF`` and ``CONTAINERS_STORAGE_CONF`` (absolute paths); merge it into the
    environment of every podman process that should use this storage.
    """
    settings = settings or PodmanSettings()
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    settings.runroot.mkdir(exist_ok=True)
    settings.graphroot.mkdir(exist_ok=True)
    _write_if_changed(settings.containers_conf, settings.render_containers_conf())
    _write_if_changed(settings.storage_conf, settings.render_storage_conf())
    return {
        "CONTAINERS_CONF": str(settings.containers_conf.resolve()),
        "CONTAINERS_STORAGE_CONF": str(settings.storage_conf.resolve()),
    }


def user_podman_config(environ: Mapping[str, str] | None = None) -> list[str]:
    """The user's own podman configuration, as a list of what was found (empty: none)."""
    env = os.environ if environ is None else environ
    found = [f"${name}" for name in ("CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF") if env.get(name)]
    config_home = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    for folder in (Path("/etc/containers"), config_home / "containers"):
        for name in ("containers.conf", "storage.conf"):
            if (folder / name).is_file():
                found.append(str(folder / name))
    return found


def podman_environment(
    mode: PodmanConfigMode = "auto", settings: PodmanSettings | None = None
) -> dict[str, str]:
    """Environment variables to add for podman: ``{}`` means "the user's configuration".

    ``auto`` uses the user's configuration when :func:`user_podman_config` finds one, else
    writes and uses runnerkit's (see the module documentation).
    """
    if mode == "user" or (mode == "auto" and user_podman_config() and settings is None):
        return {}
    return write_podman_config(settings)
