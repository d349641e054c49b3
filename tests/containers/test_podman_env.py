"""runnerkit's podman configuration and the apt mirror lookup (no container engine needed)."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from runnerkit.containers import (
    PodmanEngine,
    PodmanSettings,
    debian_mirror,
    default_state_dir,
    podman_environment,
    user_podman_config,
    write_podman_config,
)


def test_write_podman_config_writes_both_files_and_returns_their_env(tmp_path: Path) -> None:
    settings = PodmanSettings(tmp_path / "state", storage_driver="vfs")
    env = write_podman_config(settings)
    assert env == {
        "CONTAINERS_CONF": str(tmp_path / "state" / "containers.conf"),
        "CONTAINERS_STORAGE_CONF": str(tmp_path / "state" / "storage.conf"),
    }
    containers_conf = Path(env["CONTAINERS_CONF"]).read_text()
    assert 'runtime = "runc"' in containers_conf
    assert "default_ulimits = [" in containers_conf
    storage_conf = Path(env["CONTAINERS_STORAGE_CONF"]).read_text()
    assert 'driver = "vfs"' in storage_conf
    assert f'runroot = "{tmp_path / "state" / "run"}"' in storage_conf
    assert f'graphroot = "{tmp_path / "state" / "storage"}"' in storage_conf
    assert (tmp_path / "state" / "run").is_dir() and (tmp_path / "state" / "storage").is_dir()


def test_ulimits_never_exceed_this_process_hard_limits(tmp_path: Path) -> None:
    settings = PodmanSettings(tmp_path)
    limits = dict(item.split("=", 1) for item in settings.ulimits)
    for name, kind in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC)):
        soft, hard = (int(v) for v in limits[name].split(":"))
        assert soft == hard
        host_hard = resource.getrlimit(kind)[1]
        assert host_hard == resource.RLIM_INFINITY or hard <= host_hard


def test_existing_storage_keeps_its_driver(tmp_path: Path) -> None:
    write_podman_config(PodmanSettings(tmp_path, storage_driver="vfs"))
    # a later default (auto-detected) configuration must not switch an existing storage's driver
    env = write_podman_config(PodmanSettings(tmp_path))
    assert 'driver = "vfs"' in Path(env["CONTAINERS_STORAGE_CONF"]).read_text()


def test_write_is_idempotent(tmp_path: Path) -> None:
    env = write_podman_config(PodmanSettings(tmp_path, storage_driver="overlay"))
    before = Path(env["CONTAINERS_CONF"]).stat().st_mtime_ns
    write_podman_config(PodmanSettings(tmp_path, storage_driver="overlay"))
    assert Path(env["CONTAINERS_CONF"]).stat().st_mtime_ns == before


def test_state_dir_follows_runnerkit_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNNERKIT_CONTAINERS_DIR", raising=False)
    monkeypatch.setenv("RUNNERKIT_HOME", str(tmp_path / "home"))
    assert default_state_dir() == tmp_path / "home" / "containers"
    monkeypatch.setenv("RUNNERKIT_CONTAINERS_DIR", str(tmp_path / "elsewhere"))
    assert default_state_dir() == tmp_path / "elsewhere"


def test_auto_mode_respects_the_users_own_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNNERKIT_CONTAINERS_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("CONTAINERS_STORAGE_CONF", "/somewhere/storage.conf")
    assert "$CONTAINERS_STORAGE_CONF" in user_podman_config()
    assert podman_environment("auto") == {}
    assert not (tmp_path / "state").exists()  # nothing written for a user with a set-up
    assert PodmanEngine(config="auto").env_overrides == {}
    # managed is explicit: written and used even so
    env = podman_environment("managed")
    assert env["CONTAINERS_STORAGE_CONF"] == str(tmp_path / "state" / "storage.conf")


def test_user_config_file_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONTAINERS_CONF", raising=False)
    monkeypatch.delenv("CONTAINERS_STORAGE_CONF", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "containers").mkdir()
    (tmp_path / "containers" / "storage.conf").write_text("[storage]\n")
    assert str(tmp_path / "containers" / "storage.conf") in user_podman_config()


def test_debian_mirror_reads_deb822_and_one_line_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RUNNERKIT_DEBIAN_MIRROR", raising=False)
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\n"
        "# a comment\n"
        "URIs: http://mirror.example/debian\n"
        "Suites: bookworm bookworm-updates\n"
        "Components: main\n"
        "\n"
        "Types: deb\n"
        "URIs: http://mirror.example/debian-security\n"
        "Suites: bookworm-security\n"
    )
    assert debian_mirror("bookworm", apt) == "http://mirror.example/debian"
    (apt / "sources.list.d" / "debian.sources").unlink()
    (apt / "sources.list").write_text(
        "deb [arch=amd64 signed-by=/k.gpg] http://other.example/debian trixie main\n"
        "deb http://other.example/debian bookworm main\n"
    )
    assert debian_mirror("trixie", apt) == "http://other.example/debian"
    (apt / "sources.list").unlink()
    assert debian_mirror("bookworm", apt) == "http://deb.debian.org/debian"
    monkeypatch.setenv("RUNNERKIT_DEBIAN_MIRROR", "http://override.example/debian")
    assert debian_mirror("bookworm", apt) == "http://override.example/debian"
