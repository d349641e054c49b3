"""Bento tags: `name:version`, with versions generated sortable by build time."""

from __future__ import annotations

import datetime
import re

import attrs

from runnerkit.bentos._errors import BentoError

NAME_PATTERN = re.compile(r"^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$")
# Docker image tags allow [A-Za-z0-9_.-] up to 128 characters; versions must fit in one.
VERSION_PATTERN = re.compile(r"^[a-z0-9]([a-z0-9._-]{0,126}[a-z0-9])?$")
LATEST = "latest"


class InvalidTagError(BentoError, ValueError):
    """A bento tag or name that runnerkit cannot store or turn into an image tag."""


def validate_name(name: str, what: str = "bento name") -> str:
    if not NAME_PATTERN.match(name):
        raise InvalidTagError(
            f"{what} {name!r} is invalid: expected 1-63 lowercase letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit"
        )
    return name


def validate_version(version: str) -> str:
    if not VERSION_PATTERN.match(version):
        raise InvalidTagError(
            f"bento version {version!r} is invalid: expected 1-128 lowercase letters, digits, '.', "
            "'_' or '-', starting and ending with a letter or digit"
        )
    return version


@attrs.frozen
class Tag:
    """`digits:20250107-101112-123456`; `version` None (or "latest") names the newest build."""

    name: str = attrs.field(validator=lambda _, __, v: validate_name(v))
    version: str | None = attrs.field(
        default=None, validator=lambda _, __, v: v is None or validate_version(v)
    )

    @classmethod
    def from_str(cls, text: str) -> Tag:
        name, sep, version = text.strip().partition(":")
        if sep and not version:
            raise InvalidTagError(f"bento tag {text!r}: nothing after ':' (expected NAME or NAME:VERSION)")
        return cls(name.lower(), version.lower() if sep else None)

    @property
    def is_latest(self) -> bool:
        return self.version is None or self.version == LATEST

    def __str__(self) -> str:
        return self.name if self.version is None else f"{self.name}:{self.version}"


def generate_version(now: datetime.datetime | None = None) -> str:
    """UTC build time to the microsecond: later builds sort after earlier ones as strings."""
    moment = (now or datetime.datetime.now(datetime.timezone.utc)).astimezone(datetime.timezone.utc)
    return moment.strftime("%Y%m%d-%H%M%S-%f")
