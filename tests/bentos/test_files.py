"""Which files of the build context a bento takes: include, exclude, .bentoignore, defaults."""

from __future__ import annotations

from pathlib import Path

from runnerkit.bentos._files import collect_files


def make_tree(root: Path, files: list[str]) -> None:
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)


TREE = [
    "service.py",
    "lib/util.py",
    "lib/__pycache__/util.cpython-311.pyc",
    "data/a.png",
    "data/b.tmp",
    "notes.md",
    ".git/config",
    ".venv/lib/site.py",
    "myenv/pyvenv.cfg",
    "myenv/lib/x.py",
    ".env",
    "secret/key.txt",
]


def test_include_everything_minus_default_excludes(tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    files = set(collect_files(tmp_path, ["*"]))
    assert files == {"service.py", "lib/util.py", "data/a.png", "data/b.tmp", "notes.md", "secret/key.txt"}


def test_include_patterns_select_and_exclude_wins(tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    files = set(collect_files(tmp_path, ["*.py", "/data/"], ["*.tmp", "/lib/"]))
    assert files == {"service.py", "data/a.png"}


def test_anchored_patterns(tmp_path: Path) -> None:
    make_tree(tmp_path, [*TREE, "lib/data/deep.png"])
    assert set(collect_files(tmp_path, ["/data/*.png"])) == {"data/a.png"}
    assert set(collect_files(tmp_path, ["data/"])) == {"data/a.png", "data/b.tmp", "lib/data/deep.png"}


def test_bentoignore_is_honoured(tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    (tmp_path / ".bentoignore").write_text("# private\nsecret/\n*.md\n")
    files = set(collect_files(tmp_path, ["*"]))
    assert "secret/key.txt" not in files and "notes.md" not in files
    assert ".bentoignore" not in files
    assert "service.py" in files


def test_skip_dirs_are_never_entered(tmp_path: Path) -> None:
    make_tree(tmp_path, [*TREE, "store/bentos/x/bento.yaml"])
    files = set(collect_files(tmp_path, ["*"], skip_dirs=[tmp_path / "store"]))
    assert not any(f.startswith("store/") for f in files)
