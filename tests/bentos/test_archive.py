"""`runnerkit export` / `import`: round trip, and refusal of archives that would write outside."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from runnerkit.bentos import Bento, BentoArchiveError, BentoError, BentoStore, export_bento, import_bento

from .test_build import files_under

BENTO_YAML = yaml.safe_dump({"name": "evil", "version": "v1", "service": "s:svc"}).encode()


def test_round_trip(example_bento: Bento, example_store: BentoStore, tmp_path: Path) -> None:
    archive = export_bento(example_bento.tag, tmp_path, store=example_store)
    assert archive == tmp_path / f"digits-{example_bento.version}.tar.gz"
    other = BentoStore(tmp_path / "other-home" / "bentos")
    imported = import_bento(archive, store=other)
    assert imported.tag == example_bento.tag
    assert files_under(imported.path) == files_under(example_bento.path)
    assert (imported.path / "env" / "docker" / "entrypoint.sh").stat().st_mode & 0o100  # still executable
    assert other.get("digits:latest") == imported
    with pytest.raises(BentoError, match="already in"):
        import_bento(archive, store=other)


def make_archive(path: Path, add: Callable[[tarfile.TarFile], None]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo("bento.yaml")
        info.size = len(BENTO_YAML)
        archive.addfile(info, io.BytesIO(BENTO_YAML))
        add(archive)
    return path


def add_file(name: str) -> Callable[[tarfile.TarFile], None]:
    def add(archive: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        data = b"pwned"
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))

    return add


def add_link(name: str, target: str, kind: bytes) -> Callable[[tarfile.TarFile], None]:
    def add(archive: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = target
        archive.addfile(info)

    return add


def add_special(name: str, kind: bytes) -> Callable[[tarfile.TarFile], None]:
    def add(archive: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type = kind
        archive.addfile(info)

    return add


@pytest.mark.parametrize(
    ("add", "message"),
    [
        (add_file("/tmp/runnerkit-test-absolute-evil"), "has an absolute path"),
        (add_file("src/../../evil.txt"), r"goes outside the bento \('\.\.'\)"),
        (add_file("../evil.txt"), r"goes outside the bento \('\.\.'\)"),
        (add_link("src/link", "/etc", tarfile.SYMTYPE), "symbolic link to '/etc', outside the bento"),
        (add_link("src/link", "../../outside", tarfile.SYMTYPE), "symbolic link to '../../outside'"),
        (add_link("src/hard", "../outside.txt", tarfile.LNKTYPE), "hard link to '../outside.txt'"),
        (add_link("src/hard", "/etc/passwd", tarfile.LNKTYPE), "hard link to '/etc/passwd'"),
        (add_special("src/fifo", tarfile.FIFOTYPE), "device, FIFO or other special file"),
        (add_special("src/dev", tarfile.CHRTYPE), "device, FIFO or other special file"),
    ],
    ids=[
        "absolute",
        "dotdot-inside",
        "dotdot",
        "symlink-absolute",
        "symlink-up",
        "hardlink-up",
        "hardlink-absolute",
        "fifo",
        "device",
    ],
)
def test_unsafe_archives_are_refused(
    tmp_path: Path, store: BentoStore, add: Callable[[tarfile.TarFile], None], message: str
) -> None:
    archive = make_archive(tmp_path / "evil.tar.gz", add)
    with pytest.raises(BentoArchiveError, match=rf"{archive}: entry .*{message}.*refusing to import"):
        import_bento(archive, store=store)
    assert store.bentos() == []
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path.parent / "evil.txt").exists()
    assert not Path("/tmp/runnerkit-test-absolute-evil").exists()


def test_links_inside_the_bento_are_accepted(tmp_path: Path, store: BentoStore) -> None:
    def add(archive: tarfile.TarFile) -> None:
        add_file("src/data/real.txt")(archive)
        add_link("src/alias.txt", "data/real.txt", tarfile.SYMTYPE)(archive)

    bento = import_bento(make_archive(tmp_path / "ok.tar.gz", add), store=store)
    assert (bento.src_dir / "alias.txt").read_text() == "pwned"


def test_not_a_bento(tmp_path: Path, store: BentoStore) -> None:
    path = tmp_path / "plain.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        add_file("README.md")(archive)
    with pytest.raises(BentoArchiveError, match="not a bento archive"):
        import_bento(path, store=store)
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"not a tar file at all")
    with pytest.raises(BentoArchiveError, match="not a readable tar archive"):
        import_bento(garbage, store=store)
    assert store.bentos() == []
