"""Bento tags and generated versions."""

from __future__ import annotations

import datetime

import pytest

from runnerkit.bentos import InvalidTagError, Tag, generate_version


def test_parses_name_and_version() -> None:
    assert Tag.from_str("digits:v1") == Tag("digits", "v1")
    assert Tag.from_str("Digits") == Tag("digits", None)  # lowercased, as image names are
    assert Tag.from_str("digits").is_latest and Tag.from_str("digits:latest").is_latest
    assert str(Tag("digits", "v1")) == "digits:v1"


@pytest.mark.parametrize("text", ["-digits", "digits:", "dig its", "a" * 64, "digits:v 1", "digits:-v"])
def test_rejects_bad_tags_saying_what_is_allowed(text: str) -> None:
    with pytest.raises(InvalidTagError, match=r"expected|nothing after"):
        Tag.from_str(text)


def test_generated_versions_sort_by_build_time() -> None:
    utc = datetime.timezone.utc
    moments = [
        datetime.datetime(2025, 1, 9, 23, 59, 59, 999999, tzinfo=utc),
        datetime.datetime(2025, 1, 10, 0, 0, 0, 1, tzinfo=utc),
        datetime.datetime(2025, 11, 2, 8, 0, 0, 0, tzinfo=utc),
        # the same instant written in another zone sorts by its UTC time
        datetime.datetime(2025, 11, 2, 10, 0, 0, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
    ]
    versions = [generate_version(m) for m in moments]
    assert versions == sorted(versions)
    for version in versions:
        Tag("digits", version)  # valid as a tag (and so as an image tag)


def test_consecutive_versions_increase() -> None:
    first = generate_version()
    second = generate_version()
    assert second >= first
