"""Container engines and images for packaging runnerkit services.

- :class:`ContainerEngine` with :class:`PodmanEngine` (podman CLI) and :class:`DockerEngine`
  (docker SDK; ``DOCKER_HOST``, or podman's API socket through :class:`PodmanApiService`);
- :func:`podman_environment` / :func:`write_podman_config`: the podman configuration that works
  on machines without a Docker engine;
- :func:`ensure_cpu_base_image`: a local CPU stand-in for ``nvcr.io/nvidia/tritonserver:<yy.mm>-py3``
  (:data:`CPU_STANDIN_IMAGE`).
"""

from __future__ import annotations

from runnerkit.containers._base_image import (
    CPU_STANDIN_IMAGE,
    DEBIAN_MINBASE_IMAGE,
    NGC_RELEASE,
    NGC_TRITON_IMAGE,
    STANDIN_PYTHON,
    TRITON_VERSION,
    CpuBaseImage,
    PytritonServer,
    debian_mirror,
    ensure_cpu_base_image,
    ensure_debian_base_image,
    find_pytriton_server,
    make_rootfs_tarball,
    verify_cpu_base_image,
    write_identity_model_repository,
)
from runnerkit.containers._docker import DockerEngine
from runnerkit.containers._engine import ContainerEngine, ContainerHandle, LogCallback, RunResult
from runnerkit.containers._podman import PodmanEngine
from runnerkit.containers._podman_env import (
    PodmanConfigMode,
    PodmanSettings,
    default_state_dir,
    podman_environment,
    user_podman_config,
    write_podman_config,
)
from runnerkit.containers._podman_service import PodmanApiService, ping_unix_socket
from runnerkit.containers.errors import (
    ContainerBuildError,
    ContainerEngineUnavailableError,
    ContainerError,
    ContainerRunError,
)

__all__ = [
    "CPU_STANDIN_IMAGE",
    "DEBIAN_MINBASE_IMAGE",
    "NGC_RELEASE",
    "NGC_TRITON_IMAGE",
    "STANDIN_PYTHON",
    "TRITON_VERSION",
    "ContainerBuildError",
    "ContainerEngine",
    "ContainerEngineUnavailableError",
    "ContainerError",
    "ContainerHandle",
    "ContainerRunError",
    "CpuBaseImage",
    "DockerEngine",
    "LogCallback",
    "PodmanApiService",
    "PodmanConfigMode",
    "PodmanEngine",
    "PodmanSettings",
    "PytritonServer",
    "RunResult",
    "debian_mirror",
    "default_state_dir",
    "ensure_cpu_base_image",
    "ensure_debian_base_image",
    "find_pytriton_server",
    "make_rootfs_tarball",
    "ping_unix_socket",
    "podman_environment",
    "user_podman_config",
    "verify_cpu_base_image",
    "write_identity_model_repository",
    "write_podman_config",
]
