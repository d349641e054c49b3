"""The bento store: `$RUNNERKIT_HOME/bentos/<name>/<version>/`."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from runnerkit._settings import runnerkit_home
from runnerkit.bentos._bento import BENTO_YAML, Bento
from runnerkit.bentos._errors import BentoError, BentoNotFoundError
from runnerkit.bentos._tag import Tag

STAGING = ".staging"


class BentoStore:
    """Bentos by tag. Writes go through a staging directory on the same filesystem and an
    atomic rename, so a bento is either complete in the store or absent."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else runnerkit_home() / "bentos"

    def __repr__(self) -> str:
        return f"BentoStore({str(self.root)!r})"

    def path_for(self, tag: Tag) -> Path:
        if tag.is_latest:
            raise ValueError("path_for needs an explicit version")
        assert tag.version is not None
        return self.root / tag.name / tag.version

    def bentos(self, name: str | None = None) -> list[Bento]:
        """Every bento (of `name`), newest first."""
        if not self.root.is_dir():
            return []
        names = [name] if name else sorted(p.name for p in self.root.iterdir() if not p.name.startswith("."))
        bentos: list[Bento] = []
        for bento_name in names:
            folder = self.root / bento_name
            if not folder.is_dir():
                continue
            for version_dir in folder.iterdir():
                if (version_dir / BENTO_YAML).is_file():
                    with contextlib.suppress(BentoError):
                        bentos.append(Bento.from_path(version_dir))
        bentos.sort(key=lambda b: (b.creation_time, b.version), reverse=True)
        return bentos

    def get(self, tag: Tag | str) -> Bento:
        """The bento with this tag; `name` or `name:latest` is the newest build of `name`."""
        tag = Tag.from_str(tag) if isinstance(tag, str) else tag
        if tag.is_latest:
            found = self.bentos(tag.name)
            if not found:
                raise BentoNotFoundError(f"no bento named {tag.name!r} in {self.root}{self._known()}")
            return found[0]
        path = self.path_for(tag)
        if not (path / BENTO_YAML).is_file():
            raise BentoNotFoundError(f"no bento {str(tag)!r} in {self.root}{self._known(tag.name)}")
        return Bento.from_path(path)

    def _known(self, name: str | None = None) -> str:
        tags = [str(b.tag) for b in self.bentos(name)][:5]
        return f" (have: {', '.join(tags)})" if tags else ""

    def exists(self, tag: Tag) -> bool:
        return not tag.is_latest and (self.path_for(tag) / BENTO_YAML).is_file()

    def delete(self, tag: Tag | str) -> Bento:
        bento = self.get(tag)
        # Move aside first: a reader never sees a half-deleted bento.
        with self.staging_dir("delete-") as trash:
            os.rename(bento.path, trash / "bento")
        with contextlib.suppress(OSError):
            bento.path.parent.rmdir()  # the name folder, when it was the last version
        return bento

    @contextlib.contextmanager
    def staging_dir(self, prefix: str = "build-") -> Iterator[Path]:
        """A scratch directory next to the store (same filesystem), removed afterwards."""
        staging_root = self.root / STAGING
        staging_root.mkdir(parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=staging_root))
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def commit(self, staged: Path, tag: Tag) -> Bento:
        """Move a complete staged bento into place, atomically; refuse to replace one."""
        target = self.path_for(tag)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            raise BentoError(f"bento {str(tag)!r} already exists in {self.root}; delete it first or pick "
                             "another version")  # fmt: skip
        try:
            os.rename(staged, target)
        except OSError as exc:
            if target.exists():
                raise BentoError(f"bento {str(tag)!r} already exists in {self.root}") from exc
            raise
        return Bento.from_path(target)
