"""Which files of the build context go into a bento: gitignore-style include and exclude."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import pathspec

BENTOIGNORE = ".bentoignore"
# Never wanted in a bento: caches, version control, virtual environments, and dotenv files
# (they routinely hold credentials, which must stay out of bentos and images).
DEFAULT_EXCLUDE: tuple[str, ...] = (
    "__pycache__/",
    "*.py[cod]",
    ".git/",
    ".hg/",
    ".svn/",
    ".venv/",
    "venv/",
    ".tox/",
    ".nox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    "*.egg-info/",
    ".ipynb_checkpoints/",
    ".env",
    ".DS_Store",
)


def _is_virtualenv(directory: Path) -> bool:
    return (directory / "pyvenv.cfg").is_file()


def collect_files(
    build_ctx: Path,
    include: Iterable[str],
    exclude: Iterable[str] = (),
    *,
    skip_dirs: Iterable[Path] = (),
) -> Iterator[str]:
    """Relative POSIX paths of the files to copy, sorted per directory.

    A file is taken when an `include` pattern matches it and no exclude pattern does (exclude
    wins). Exclude patterns are the defaults, then `.bentoignore` at the root of the context,
    then `exclude`. Virtual environments are skipped whatever their name; `skip_dirs` (such as
    the bento store) are never entered.
    """
    root = build_ctx.resolve()
    include_spec = pathspec.GitIgnoreSpec.from_lines(list(include))
    exclude_lines = list(DEFAULT_EXCLUDE)
    ignore_file = root / BENTOIGNORE
    if ignore_file.is_file():
        exclude_lines += ignore_file.read_text(encoding="utf-8").splitlines()
    exclude_lines += list(exclude)
    exclude_spec = pathspec.GitIgnoreSpec.from_lines(exclude_lines)
    skipped = {p.resolve() for p in skip_dirs}

    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        rel_dir = here.relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        kept = []
        for name in sorted(dirnames):
            child = here / name
            if child.resolve() in skipped or _is_virtualenv(child):
                continue
            if exclude_spec.match_file(prefix + name + "/"):
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = prefix + name
            if name == BENTOIGNORE and not prefix:
                continue
            if include_spec.match_file(rel) and not exclude_spec.match_file(rel):
                yield rel
