"""`runnerkit export` / `runnerkit import`: a bento as a .tar.gz, extracted only when safe.

An archive is refused, before anything is written, when any entry has an absolute path, a `..`
component, is a link pointing outside the bento, or is a device, FIFO or other special file.
"""

from __future__ import annotations

import os
import posixpath
import tarfile
from pathlib import Path, PurePosixPath

import yaml

from runnerkit.bentos._bento import BENTO_YAML, Bento
from runnerkit.bentos._errors import BentoArchiveError, BentoError
from runnerkit.bentos._store import BentoStore
from runnerkit.bentos._tag import Tag


def export_bento(tag: Tag | str, path: str | os.PathLike[str], *, store: BentoStore | None = None) -> Path:
    """Write the bento to `path` (a .tar.gz; a directory gets `<name>-<version>.tar.gz`)."""
    store = store or BentoStore()
    bento = store.get(tag)
    target = Path(path).expanduser()
    if target.is_dir():
        target = target / f"{bento.name}-{bento.version}.tar.gz"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    try:
        with tarfile.open(partial, "w:gz") as archive:
            # Entries relative to the bento root; links are stored as the files they point to.
            for root, dirs, files in os.walk(bento.path):
                dirs.sort()
                for name in sorted(files):
                    file = Path(root) / name
                    arcname = file.relative_to(bento.path).as_posix()
                    info = archive.gettarinfo(str(file), arcname)
                    if info.issym() or info.islnk():
                        info = archive.gettarinfo(str(file.resolve()), arcname)
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    with open(file, "rb") as handle:
                        archive.addfile(info, handle)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def check_members(members: list[tarfile.TarInfo], archive_name: str) -> None:
    """Raise BentoArchiveError for the first entry that could write outside the target."""
    for member in members:
        name = member.name
        where = f"{archive_name}: entry {name!r}"
        if name.startswith("/") or PurePosixPath(name).is_absolute() or (len(name) > 1 and name[1] == ":"):
            raise BentoArchiveError(f"{where} has an absolute path; refusing to import")
        if ".." in PurePosixPath(name).parts or "\\" in name:
            raise BentoArchiveError(f"{where} goes outside the bento ('..'); refusing to import")
        if member.issym() or member.islnk():
            target = member.linkname
            # hard link names are relative to the archive root, symlinks to the link's folder
            base = "" if member.islnk() else posixpath.dirname(name)
            if (
                target.startswith("/")
                or ".." in PurePosixPath(target).parts
                or posixpath.normpath(posixpath.join(base, target)).startswith("..")
            ):
                kind = "hard link" if member.islnk() else "symbolic link"
                raise BentoArchiveError(
                    f"{where} is a {kind} to {target!r}, outside the bento; refusing to import"
                )
        elif not (member.isfile() or member.isdir()):
            raise BentoArchiveError(f"{where} is a device, FIFO or other special file; refusing to import")


def import_bento(path: str | os.PathLike[str], *, store: BentoStore | None = None) -> Bento:
    """Add an exported bento to the store; refuses unsafe archives and existing tags."""
    store = store or BentoStore()
    source = Path(path).expanduser()
    if not source.is_file():
        raise BentoArchiveError(f"{source}: no such file")
    try:
        with tarfile.open(source, "r:*") as archive:
            members = archive.getmembers()
            check_members(members, str(source))
            found = [m for m in members if m.isfile() and _root_name(m.name) == BENTO_YAML]
            if not found:
                raise BentoArchiveError(f"{source}: not a bento archive (no {BENTO_YAML} at its root)")
            bento_yaml = archive.extractfile(found[0])
            assert bento_yaml is not None
            info = yaml.safe_load(bento_yaml.read())
            if not isinstance(info, dict) or "name" not in info or "version" not in info:
                raise BentoArchiveError(f"{source}: {BENTO_YAML} lacks name and version")
            tag = Tag(str(info["name"]), str(info["version"]))
            if store.exists(tag):
                raise BentoError(
                    f"bento {str(tag)!r} is already in {store.root}; delete it first to re-import"
                )
            with store.staging_dir("import-") as staging:
                target = staging / "bento"
                target.mkdir()
                _extract(archive, members, target)
                _verify_inside(target)
                return store.commit(target, tag)
    except tarfile.TarError as exc:
        raise BentoArchiveError(f"{source}: not a readable tar archive: {exc}") from exc


def _root_name(name: str) -> str:
    return name[2:] if name.startswith("./") else name


def _extract(archive: tarfile.TarFile, members: list[tarfile.TarInfo], target: Path) -> None:
    if hasattr(tarfile, "data_filter"):
        # The standard library's own checks as a second line (Python 3.12, and 3.10.12+/3.11.4+).
        archive.extractall(target, members=members, filter="data")
    else:  # pragma: no cover - older patch releases; check_members already vetted every entry
        archive.extractall(target, members=members)


def _verify_inside(root: Path) -> None:
    resolved_root = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            entry = (Path(dirpath) / name).resolve()
            if entry != resolved_root and not entry.is_relative_to(resolved_root):
                raise BentoArchiveError(
                    f"{Path(dirpath) / name} resolves outside the bento; refusing to import"
                )
