"""The store: list newest first, get by tag or latest, delete."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from runnerkit.bentos import BentoNotFoundError, BentoStore, build

from .conftest import Project


def test_get_list_delete(make_project: Callable[..., Project], store: BentoStore) -> None:
    project = make_project("s3://bucket/prefix")
    first = build(project.service, build_ctx=project.root, version="a1", store=store, quiet=True)
    second = build(project.service, build_ctx=project.root, version="a2", store=store, quiet=True)
    assert store.bentos() == [second, first]
    assert store.get("tiny:a1") == first and store.get("tiny:latest") == second
    assert store.path_for(first.tag) == store.root / "tiny" / "a1"

    assert store.delete("tiny:a2") == second
    assert not second.path.exists()
    assert store.get("tiny") == first  # latest falls back to the remaining one
    store.delete("tiny")
    assert store.bentos() == [] and not (store.root / "tiny").exists()


def test_unknown_tags_say_what_exists(make_project: Callable[..., Project], store: BentoStore) -> None:
    project = make_project("s3://bucket/prefix")
    build(project.service, build_ctx=project.root, version="a1", store=store, quiet=True)
    with pytest.raises(BentoNotFoundError, match=r"no bento 'tiny:zz' in .* \(have: tiny:a1\)"):
        store.get("tiny:zz")
    with pytest.raises(BentoNotFoundError, match="no bento named 'other'"):
        store.get("other:latest")
