"""`bentofile.yaml`: what to build, validated on load into frozen attrs classes.

Every problem is reported as a :class:`BentofileError` naming the file, the key (as a dotted
path such as ``python.packages[2]``) and what is allowed there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import yaml

from runnerkit.bentos._errors import BentoError
from runnerkit.bentos._tag import validate_name

# A recent NGC release, pinned so that a rebuild gives the same image (Ubuntu 24.04, Python 3.12).
DEFAULT_BASE_IMAGE = "nvcr.io/nvidia/tritonserver:25.11-py3"
DEFAULT_INCLUDE: tuple[str, ...] = ("*",)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Credentials belong in the runtime environment (`docker run -e`, a secret store), never in the
# bento, its Dockerfile or the image: names like these are refused.
_CREDENTIAL_NAME = re.compile(
    r"(^AWS_ACCESS_KEY_ID$|^AWS_SESSION_TOKEN$|SECRET|PASSWORD|PASSWD|TOKEN|CREDENTIAL|API_KEY|PRIVATE_KEY)",
    re.IGNORECASE,
)
_URL_WITH_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s]*:[^/@\s]*@", re.IGNORECASE)
T = TypeVar("T")


class BentofileError(BentoError, ValueError):
    """A bentofile (or build options) with an unknown key, a wrong type or a bad value."""

    def __init__(self, source: str, key: str, message: str) -> None:
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{key}: {message}" if key else f"{where}{message}")
        self.source = source
        self.key = key


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if value is not None else ()


def _as_dict(value: Mapping[str, str] | None) -> dict[str, str]:
    return dict(value) if value is not None else {}


@attrs.frozen
class PythonOptions:
    """The `python:` section: what the bento's Python environment needs."""

    packages: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple)
    requirements_txt: str | None = None
    lock_packages: bool = False
    index_url: str | None = None
    extra_index_url: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple)
    find_links: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple)
    wheels: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "packages": list(self.packages),
            "requirements_txt": self.requirements_txt,
            "lock_packages": self.lock_packages,
            "index_url": self.index_url,
            "extra_index_url": list(self.extra_index_url),
            "find_links": list(self.find_links),
            "wheels": list(self.wheels),
        }


@attrs.frozen
class DockerOptions:
    """The `docker:` section: how `runnerkit containerize` builds the image."""

    base_image: str = DEFAULT_BASE_IMAGE
    system_packages: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple)
    env: Mapping[str, str] = attrs.field(factory=dict, converter=_as_dict)
    setup_script: str | None = None
    dockerfile_template: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "base_image": self.base_image,
            "system_packages": list(self.system_packages),
            "env": dict(self.env),
            "setup_script": self.setup_script,
            "dockerfile_template": self.dockerfile_template,
        }


@attrs.frozen
class BentoBuildConfig:
    """Everything `runnerkit build` needs, as read from bentofile.yaml or given to `build()`."""

    service: str
    name: str | None = None
    description: str | None = None
    labels: Mapping[str, str] = attrs.field(factory=dict, converter=_as_dict)
    include: tuple[str, ...] = attrs.field(default=DEFAULT_INCLUDE, converter=_as_tuple)
    exclude: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple)
    python: PythonOptions = attrs.field(factory=PythonOptions)
    docker: DockerOptions = attrs.field(factory=DockerOptions)
    envs: Mapping[str, str] = attrs.field(factory=dict, converter=_as_dict)
    # S3 model repositories are referenced by URL unless this asks to copy them into the bento.
    bundle_models: bool = False

    @classmethod
    def from_dict(cls, data: Any, source: str = "") -> BentoBuildConfig:
        """Validate a parsed bentofile; `source` (the file name) prefixes every error."""
        return _parse_config(data, source)


def load_bentofile(path: str | os.PathLike[str]) -> BentoBuildConfig:
    file = Path(path)
    if not file.is_file():
        raise BentofileError(str(file), "", "no such file (expected a bentofile.yaml with a `service:` key)")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise BentofileError(str(file), "", f"not valid YAML: {exc}") from exc
    return BentoBuildConfig.from_dict(data, str(file))


# -- validation ---------------------------------------------------------------------------------


class _Reader:
    """Reads one mapping of the bentofile, reporting errors with the file and the key path."""

    def __init__(self, data: Any, source: str, prefix: str, allowed: Sequence[str]) -> None:
        self.source = source
        self.prefix = prefix
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise BentofileError(
                source, prefix or "(top level)", f"expected a mapping with keys {list(allowed)}, "
                f"got {_kind(data)}",
            )  # fmt: skip
        unknown = [str(k) for k in data if k not in allowed]
        if unknown:
            raise BentofileError(
                source,
                self.key(unknown[0]),
                f"unknown key; allowed {'here' if prefix else 'at the top level'}: {', '.join(allowed)}",
            )
        self.data: Mapping[str, Any] = data

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def error(self, name: str, message: str) -> BentofileError:
        return BentofileError(self.source, self.key(name), message)

    def string(self, name: str, default: str | None = None) -> str | None:
        value = self.data.get(name)
        if value is None:
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.error(name, f"expected a non-empty string, got {_kind(value)}")
        return value

    def boolean(self, name: str, default: bool) -> bool:
        value = self.data.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(name, f"expected true or false, got {_kind(value)}")
        return value

    def strings(self, name: str, *, single_ok: bool = False) -> tuple[str, ...]:
        value = self.data.get(name)
        if value is None:
            return ()
        if single_ok and isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise self.error(name, f"expected a list of strings, got {_kind(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise BentofileError(
                    self.source, f"{self.key(name)}[{i}]", f"expected a non-empty string, got {_kind(item)}"
                )
        return tuple(value)

    def mapping(self, name: str, check_key: Callable[[str, str], None] | None = None) -> dict[str, str]:
        """A string-to-string mapping; also accepts `[{name: K, value: V}]` and `["K=V"]` lists."""
        value = self.data.get(name)
        if value is None:
            return {}
        key_path = self.key(name)
        result: dict[str, str] = {}
        if isinstance(value, Mapping):
            items = list(value.items())
        elif isinstance(value, list):
            items = []
            for i, item in enumerate(value):
                if isinstance(item, Mapping) and set(item) <= {"name", "value"} and "name" in item:
                    items.append((item["name"], item.get("value", "")))
                elif isinstance(item, str) and "=" in item:
                    key, _, text = item.partition("=")
                    items.append((key, text))
                else:
                    raise BentofileError(
                        self.source,
                        f"{key_path}[{i}]",
                        f"expected `{{name: NAME, value: VALUE}}` or 'NAME=VALUE', got {_kind(item)}",
                    )
        else:
            raise BentofileError(
                self.source, key_path, f"expected a mapping of names to strings, got {_kind(value)}"
            )
        for key, item in items:
            if not isinstance(key, str) or not key:
                raise BentofileError(self.source, key_path, f"keys must be non-empty strings, got {key!r}")
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                raise BentofileError(
                    self.source, f"{key_path}.{key}", f"expected a string or number, got {_kind(item)}"
                )
            if check_key is not None:
                check_key(f"{key_path}.{key}", key)
            result[key] = str(item)
        return result


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _env_name_checker(source: str) -> Callable[[str, str], None]:
    def check(key_path: str, name: str) -> None:
        if not _ENV_NAME.match(name):
            raise BentofileError(
                source, key_path, "environment variable names are letters, digits and '_', not starting "
                "with a digit",
            )  # fmt: skip
        if _CREDENTIAL_NAME.search(name):
            raise BentofileError(
                source, key_path, "looks like a credential; credentials are never written into a bento, "
                "its Dockerfile or image: pass it at run time (e.g. `docker run -e "
                f"{name}`) or mount it as a secret",
            )  # fmt: skip

    return check


def _check_url(source: str, key_path: str, url: str | None) -> None:
    if url is not None and _URL_WITH_PASSWORD.match(url):
        raise BentofileError(
            source,
            key_path,
            "the URL carries a password; credentials are never written into a bento: configure the "
            "index's credentials at build time (PIP_INDEX_URL as a build secret, or a netrc)",
        )


_TOP_KEYS = (
    "service", "name", "description", "labels", "include", "exclude", "python", "docker", "envs",
    "bundle_models",
)  # fmt: skip
_PYTHON_KEYS = (
    "packages", "requirements_txt", "lock_packages", "index_url", "extra_index_url", "find_links", "wheels",
)  # fmt: skip
_DOCKER_KEYS = ("base_image", "system_packages", "env", "setup_script", "dockerfile_template")
_SERVICE_FORMAT = re.compile(r"^[^:\s]+:[A-Za-z_][A-Za-z0-9_]*$")


def _parse_config(data: Any, source: str) -> BentoBuildConfig:
    top = _Reader(data, source, "", _TOP_KEYS)
    service = top.string("service")
    if service is None:
        raise BentofileError(source, "service", "required: the service to build, as 'module:svc' or "
                             "'path/to/file.py:svc'")  # fmt: skip
    if not _SERVICE_FORMAT.match(service):
        raise BentofileError(source, "service", f"{service!r} is not 'module:svc' or 'path/to/file.py:svc'")
    name = top.string("name")
    if name is not None:
        try:
            validate_name(name)
        except ValueError as exc:
            raise BentofileError(source, "name", str(exc)) from None
    labels = top.mapping("labels")
    env_check = _env_name_checker(source)

    python = _Reader(top.data.get("python"), source, "python", _PYTHON_KEYS)
    index_url = python.string("index_url")
    _check_url(source, "python.index_url", index_url)
    extra_index_url = python.strings("extra_index_url", single_ok=True)
    for i, url in enumerate(extra_index_url):
        _check_url(source, f"python.extra_index_url[{i}]", url)
    python_options = PythonOptions(
        packages=python.strings("packages"),
        requirements_txt=python.string("requirements_txt"),
        lock_packages=python.boolean("lock_packages", False),
        index_url=index_url,
        extra_index_url=extra_index_url,
        find_links=python.strings("find_links", single_ok=True),
        wheels=python.strings("wheels"),
    )

    docker = _Reader(top.data.get("docker"), source, "docker", _DOCKER_KEYS)
    docker_options = DockerOptions(
        base_image=docker.string("base_image", DEFAULT_BASE_IMAGE) or DEFAULT_BASE_IMAGE,
        system_packages=docker.strings("system_packages"),
        env=docker.mapping("env", env_check),
        setup_script=docker.string("setup_script"),
        dockerfile_template=docker.string("dockerfile_template"),
    )
    for i, package in enumerate(docker_options.system_packages):
        if not re.fullmatch(r"[a-z0-9][a-z0-9+.\-]*(=[A-Za-z0-9.+~:\-]+)?", package):
            raise BentofileError(
                source, f"docker.system_packages[{i}]", f"{package!r} is not an apt package name "
                "(lowercase letters, digits, '+', '-', '.'; optionally '=VERSION')",
            )  # fmt: skip

    include = top.strings("include", single_ok=True) or DEFAULT_INCLUDE
    return BentoBuildConfig(
        service=service,
        name=name,
        description=top.string("description"),
        labels=labels,
        include=include,
        exclude=top.strings("exclude", single_ok=True),
        python=python_options,
        docker=docker_options,
        envs=top.mapping("envs", env_check),
        bundle_models=top.boolean("bundle_models", False),
    )
