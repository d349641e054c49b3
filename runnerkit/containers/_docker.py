"""The Docker engine: a Docker-compatible API (the Docker daemon, podman's API socket) via the docker SDK."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from runnerkit.containers._engine import (
    LOG_TAIL_LINES,
    ContainerEngine,
    ContainerHandle,
    LogCallback,
    PathLike,
    RunResult,
    context_and_dockerfile,
    normalize_id,
)
from runnerkit.containers._streaming import LineBuffer
from runnerkit.containers.errors import (
    ContainerBuildError,
    ContainerEngineUnavailableError,
    ContainerError,
    ContainerRunError,
)

PODMAN_SOCKET_HINT = (
    "start podman's Docker-compatible API and point DOCKER_HOST at it: "
    "`podman system service --time=0 unix:///run/podman/podman.sock &` then "
    "`export DOCKER_HOST=unix:///run/podman/podman.sock` "
    "(runnerkit.containers.PodmanApiService does this for you); or start the Docker daemon; "
    "or use runnerkit.containers.PodmanEngine"
)


class _DockerHandle(ContainerHandle):
    def __init__(self, container: Any, *, image: str, ports: Mapping[int, int]) -> None:
        super().__init__(container.id, image=image, ports=ports)
        self._container = container

    def is_running(self) -> bool:
        import docker.errors

        try:
            self._container.reload()
        except docker.errors.NotFound:
            return False
        return bool(self._container.status == "running")

    def logs(self) -> str:
        data: bytes = self._container.logs(stdout=True, stderr=True)
        return data.decode("utf-8", "replace")

    def stop(self, timeout: float = 10.0) -> None:
        import docker.errors

        try:
            self._container.stop(timeout=round(timeout))
        except docker.errors.NotFound:
            return
        except docker.errors.APIError:
            pass
        try:
            self._container.remove(force=True)
        except docker.errors.NotFound:
            pass


def _docker_build_source(context: Path, dockerfile: Path | None) -> dict[str, Any]:
    """``APIClient.build`` arguments for a context folder and a Dockerfile.

    A Dockerfile outside the context is added to the context tar under a generated name. (The
    SDK does this itself but then sends ``dockerfile`` twice in the query, name and content;
    Docker reads the first, podman's compat API the last and fails with ``stat ...``.)
    """
    if dockerfile is None:
        return {"path": str(context)}
    if dockerfile.resolve().is_relative_to(context):
        return {"path": str(context), "dockerfile": str(dockerfile.resolve().relative_to(context))}
    import docker.utils

    name = f".dockerfile.{uuid.uuid4().hex}"
    exclude = None
    ignore = context / ".dockerignore"
    if ignore.is_file():
        lines = (line.strip() for line in ignore.read_text().splitlines())
        exclude = [line for line in lines if line and not line.startswith("#")]
    fileobj = docker.utils.tar(str(context), exclude=exclude, dockerfile=(name, dockerfile.read_text()))
    return {"fileobj": fileobj, "custom_context": True, "dockerfile": name}


class DockerEngine(ContainerEngine):
    """A Docker-compatible API through the ``docker`` SDK.

    ``base_url`` (e.g. ``unix:///run/podman/podman.sock``) wins; without it the SDK's
    ``docker.from_env()`` reads ``DOCKER_HOST`` (default ``unix:///var/run/docker.sock``).
    ``timeout`` is the HTTP read timeout of API calls: a build step silent for longer fails.
    The client is created on first use; an engine that does not answer raises
    ``ContainerEngineUnavailableError`` naming the address that was tried.
    """

    name = "docker"

    def __init__(self, base_url: str | None = None, *, timeout: float = 600.0) -> None:
        self.base_url = base_url
        self.timeout = timeout
        self._client_obj: Any = None

    def __repr__(self) -> str:
        return f"<DockerEngine {self.address}>"

    @property
    def address(self) -> str:
        """The API address this engine uses, and where it came from."""
        if self.base_url:
            return self.base_url
        if os.environ.get("DOCKER_HOST"):
            return os.environ["DOCKER_HOST"]
        return "unix:///var/run/docker.sock"

    def _describe_address(self) -> str:
        if self.base_url:
            source = "base_url"
        elif os.environ.get("DOCKER_HOST"):
            source = "DOCKER_HOST"
        else:
            source = "the default (DOCKER_HOST not set; a docker CLI context may also apply)"
        text = f"{self.address} (from {source})"
        if self.address.startswith("unix://"):
            path = Path(self.address[len("unix://") :])
            if not path.exists():
                text += f"; socket file {path} does not exist"
            elif not path.is_socket():
                text += f"; {path} is not a socket"
            else:
                text += f"; nothing answered on socket {path}"
        return text

    def _unavailable(self, exc: BaseException) -> ContainerEngineUnavailableError:
        return ContainerEngineUnavailableError(
            "docker",
            f"the Docker API did not answer: {exc}",
            tried=self._describe_address(),
            hint=PODMAN_SOCKET_HINT,
        )

    def _client(self) -> Any:
        if self._client_obj is not None:
            return self._client_obj
        import docker
        import docker.errors
        import requests.exceptions

        try:
            if self.base_url:
                client = docker.DockerClient(base_url=self.base_url, timeout=round(self.timeout))
            else:
                client = docker.from_env(timeout=round(self.timeout))
            client.ping()
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._unavailable(exc) from exc
        self._client_obj = client
        return client

    def ping(self) -> None:
        import docker.errors
        import requests.exceptions

        client = self._client()
        try:
            client.ping()
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._unavailable(exc) from exc

    def close(self) -> None:
        if self._client_obj is not None:
            self._client_obj.close()
            self._client_obj = None

    def _api_errors(self) -> tuple[type[BaseException], ...]:
        import requests.exceptions

        return (requests.exceptions.ConnectionError,)

    def build(
        self,
        context_dir: PathLike,
        dockerfile: PathLike | None = None,
        tag: str | None = None,
        build_args: Mapping[str, str] | None = None,
        platform: str | None = None,
        on_log: LogCallback | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> str:
        import docker.errors
        import requests.exceptions

        context, dockerfile_path = context_and_dockerfile(context_dir, dockerfile)
        api = self._client().api
        sink = LineBuffer(on_log)
        deadline = None if timeout is None else time.monotonic() + timeout
        image_id: str | None = None
        error: str | None = None
        source = _docker_build_source(context, dockerfile_path)
        try:
            stream: Iterator[dict[str, Any]] = api.build(
                **source,
                tag=tag,
                buildargs=dict(build_args or {}),
                platform=platform,
                labels=dict(labels or {}) or None,
                decode=True,
                rm=True,
                forcerm=True,
                timeout=round(min(self.timeout, timeout or self.timeout)),
            )
            for chunk in stream:
                if "stream" in chunk:
                    sink.feed(str(chunk["stream"]))
                if "status" in chunk:
                    sink.line(" ".join(str(chunk[k]) for k in ("status", "id") if chunk.get(k)))
                if "error" in chunk or "errorDetail" in chunk:
                    detail = chunk.get("errorDetail") or {}
                    error = str(chunk.get("error") or detail.get("message") or chunk)
                    sink.line(error)
                aux = chunk.get("aux")
                if isinstance(aux, dict) and aux.get("ID"):
                    image_id = str(aux["ID"])
                if deadline is not None and time.monotonic() > deadline:
                    close = getattr(stream, "close", None)
                    if close is not None:
                        close()
                    sink.flush()
                    raise ContainerBuildError(
                        f"docker build of {tag or context} ran past {timeout}s and was abandoned",
                        tag=tag,
                        log_lines=sink.tail,
                    )
        except docker.errors.APIError as exc:
            sink.flush()
            sink.line(str(exc))
            raise ContainerBuildError(
                f"docker build of {tag or context} failed: {exc.explanation or exc}",
                tag=tag,
                log_lines=sink.tail,
            ) from exc
        except requests.exceptions.ConnectionError as exc:
            raise self._unavailable(exc) from exc
        except requests.exceptions.RequestException as exc:  # read timeout of a silent step
            sink.flush()
            raise ContainerBuildError(
                f"docker build of {tag or context} failed: {exc}", tag=tag, log_lines=sink.tail
            ) from exc
        finally:
            fileobj = source.get("fileobj")
            if fileobj is not None:
                fileobj.close()
        sink.flush()
        if error is not None:
            raise ContainerBuildError(
                f"docker build of {tag or context} failed: {error}", tag=tag, log_lines=sink.tail
            )
        if image_id is None:
            for line in reversed(sink.tail):
                if line.startswith("Successfully built "):
                    image_id = line.split()[-1]
                    break
        if tag:
            # the tag is the truth (the "Successfully built" id can be a short id)
            image_id = self.image_id(tag)
        if image_id is None:
            raise ContainerBuildError(f"docker build of {context} reported no image id", log_lines=sink.tail)
        return normalize_id(image_id)

    def image_id(self, tag: str) -> str:
        import docker.errors

        try:
            return normalize_id(str(self._client().images.get(tag).id))
        except docker.errors.NotFound as exc:
            raise ContainerError(f"no image {tag!r}") from exc
        except self._api_errors() as exc:
            raise self._unavailable(exc) from exc

    def image_exists(self, tag: str) -> bool:
        import docker.errors

        try:
            self._client().images.get(tag)
        except docker.errors.NotFound:
            return False
        except self._api_errors() as exc:
            raise self._unavailable(exc) from exc
        return True

    def remove_image(self, tag: str, *, force: bool = False) -> bool:
        import docker.errors

        try:
            self._client().images.remove(tag, force=force)
        except docker.errors.NotFound:
            return False
        except self._api_errors() as exc:
            raise self._unavailable(exc) from exc
        return True

    def tag_image(self, source: str, target: str) -> None:
        repository, _, tag_part = target.rpartition(":")
        if not repository or "/" in tag_part:
            repository, tag_part = target, "latest"
        self._client().images.get(source).tag(repository, tag_part)

    def _volumes(self, volumes: Mapping[PathLike, str] | None) -> dict[str, dict[str, str]]:
        return {
            str(Path(host).resolve()): {"bind": target, "mode": "rw"}
            for host, target in (volumes or {}).items()
        }

    def run(
        self,
        image: str,
        command: Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        volumes: Mapping[PathLike, str] | None = None,
        timeout: float = 120.0,
    ) -> RunResult:
        import docker.errors
        import requests.exceptions

        client = self._client()
        try:
            container = client.containers.create(
                image,
                list(command) if command else None,
                environment=dict(env or {}),
                volumes=self._volumes(volumes),
            )
        except docker.errors.APIError as exc:
            raise ContainerRunError(f"could not create a container from {image}: {exc}") from exc
        except requests.exceptions.ConnectionError as exc:
            raise self._unavailable(exc) from exc
        try:
            container.start()
            try:
                result = container.wait(timeout=timeout)
            except requests.exceptions.RequestException as exc:
                output = container.logs().decode("utf-8", "replace")
                raise ContainerRunError(
                    f"container from {image} ran past {timeout}s and was stopped",
                    log_lines=output.splitlines()[-LOG_TAIL_LINES:],
                ) from exc
            output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
            return RunResult(exit_code=int(result.get("StatusCode", -1)), output=output)
        finally:
            try:
                container.remove(force=True)
            except docker.errors.APIError:
                pass

    def start(
        self,
        image: str,
        command: Sequence[str] | None = None,
        *,
        ports: Mapping[int, int] | None = None,
        env: Mapping[str, str] | None = None,
        volumes: Mapping[PathLike, str] | None = None,
        name: str | None = None,
    ) -> ContainerHandle:
        import docker.errors
        import requests.exceptions

        try:
            container = self._client().containers.run(
                image,
                list(command) if command else None,
                detach=True,
                name=name,
                environment=dict(env or {}),
                volumes=self._volumes(volumes),
                ports={f"{c}/tcp": ("127.0.0.1", h) for c, h in (ports or {}).items()},
            )
        except docker.errors.APIError as exc:
            raise ContainerRunError(f"could not start a container from {image}: {exc}") from exc
        except requests.exceptions.ConnectionError as exc:
            raise self._unavailable(exc) from exc
        return _DockerHandle(container, image=image, ports=ports or {})
