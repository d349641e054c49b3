"""Errors of the bento layer; all derive from :class:`BentoError` (a ``RunnerkitError``)."""

from __future__ import annotations

from runnerkit.exceptions import RunnerkitError


class BentoError(RunnerkitError):
    """Base class of the errors raised while building, storing or packaging bentos."""


class BentoNotFoundError(BentoError, LookupError):
    """No bento in the store under the given tag."""


class BentoBuildError(BentoError):
    """A build that could not finish; nothing was written to the store."""


class BentoArchiveError(BentoError, ValueError):
    """An archive that is not a bento, or that holds entries runnerkit refuses to extract."""
