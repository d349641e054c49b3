"""`runnerkit containerize`: a bento -> a container image, with the docker SDK or podman."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import attrs

from runnerkit.bentos._bento import Bento
from runnerkit.bentos._bentofile import _CREDENTIAL_NAME
from runnerkit.bentos._errors import BentoError
from runnerkit.bentos._store import BentoStore
from runnerkit.bentos._tag import Tag

if TYPE_CHECKING:
    from runnerkit.containers import ContainerEngine

BACKENDS = ("docker", "podman")
_IMAGE_REFERENCE = re.compile(r"^[a-z0-9][a-z0-9._/:-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$")


@attrs.frozen
class ContainerImage:
    tag: str
    image_id: str
    bento: Bento
    backend: str


def make_engine(backend: str) -> ContainerEngine:
    """`docker`: the docker SDK on DOCKER_HOST (any Docker-compatible API, podman's included);
    `podman`: the podman command line (the user's configuration, else runnerkit's managed one)."""
    from runnerkit.containers import DockerEngine, PodmanEngine

    if backend == "docker":
        return DockerEngine()
    if backend == "podman":
        return PodmanEngine()
    raise BentoError(f"unknown container backend {backend!r}; expected one of {', '.join(BACKENDS)}")


def image_tag_for(bento: Bento) -> str:
    return f"{bento.name}:{bento.version}"


def containerize(
    tag: Tag | str,
    *,
    image_tag: str | None = None,
    backend: str = "docker",
    engine: ContainerEngine | None = None,
    platform: str | None = None,
    build_args: Mapping[str, str] | None = None,
    base_image: str | None = None,
    store: BentoStore | None = None,
    on_log: Callable[[str], None] | None = None,
    timeout: float | None = None,
) -> ContainerImage:
    """Build the bento's image (`<name>:<version>` unless `image_tag`); logs stream to `on_log`.

    `base_image` replaces the bento's `docker.base_image` (the Dockerfile's BASE_IMAGE argument),
    e.g. for a local CPU stand-in of the NGC image.
    """
    bento = (store or BentoStore()).get(tag)
    reference = image_tag or image_tag_for(bento)
    if not _IMAGE_REFERENCE.match(reference):
        raise BentoError(
            f"image tag {reference!r} is invalid: expected [registry/]name[:tag] in lowercase, e.g. "
            f"{image_tag_for(bento)}"
        )
    args = dict(build_args or {})
    for key in args:
        if _CREDENTIAL_NAME.search(key):
            raise BentoError(
                f"build argument {key!r} looks like a credential; build arguments are recorded in the "
                "image's history, so credentials must not be passed this way"
            )
    if base_image:
        args["BASE_IMAGE"] = base_image
    from runnerkit.containers import PodmanEngine

    if engine is None:
        engine = make_engine(backend)
    if isinstance(engine, PodmanEngine):
        # podman writes OCI images by default, and the OCI format has no HEALTHCHECK: ask for
        # Docker's format so the image keeps its /readyz health check.
        engine.env_overrides.setdefault("BUILDAH_FORMAT", "docker")
    image_id = engine.build(
        bento.path,
        dockerfile=bento.dockerfile,
        tag=reference,
        build_args=args,
        platform=platform,
        on_log=on_log,
        labels={"ai.runnerkit.bento": str(bento.tag)},
        timeout=timeout,
    )
    return ContainerImage(reference, image_id, bento, engine.name)
