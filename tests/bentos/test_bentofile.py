"""bentofile.yaml: loaded into attrs classes; every mistake names the file, the key and what is allowed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from runnerkit.bentos import DEFAULT_BASE_IMAGE, BentofileError, load_bentofile

from .conftest import REPO_ROOT


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "bentofile.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def test_the_project_bentofile_loads() -> None:
    config = load_bentofile(REPO_ROOT / "bentofile.yaml")
    assert config.service == "services/digits.py:svc"
    assert config.name == "digits"
    assert "numpy" in config.python.packages
    assert config.docker.base_image.startswith("nvcr.io/nvidia/tritonserver:")
    assert config.docker.base_image.endswith("-py3")


def test_defaults(tmp_path: Path) -> None:
    config = load_bentofile(write(tmp_path, "service: 'service:svc'\n"))
    assert config.include == ("*",)
    assert config.exclude == ()
    assert config.docker.base_image == DEFAULT_BASE_IMAGE
    assert config.python.lock_packages is False
    assert dict(config.envs) == {}


def test_all_fields(tmp_path: Path) -> None:
    config = load_bentofile(
        write(
            tmp_path,
            """\
            service: "services/app.py:svc"
            name: my-app
            description: a test
            labels: {team: ml, tier: 1}
            include: ["*.py", "/data/"]
            exclude: "*.tmp"
            python:
              packages: [numpy, "pillow>=10"]
              requirements_txt: requirements.txt
              lock_packages: true
              index_url: https://pypi.example/simple
              extra_index_url: https://extra.example/simple
              find_links: [https://wheels.example/]
              wheels: [dist/x-1.0-py3-none-any.whl]
            docker:
              base_image: localhost/base:1
              system_packages: [curl, libgomp1]
              env: ["LOG_LEVEL=debug"]
              setup_script: setup.sh
              dockerfile_template: Dockerfile.template
            envs:
              - name: MODE
                value: fast
            """,
        )
    )
    assert config.name == "my-app"
    assert dict(config.labels) == {"team": "ml", "tier": "1"}
    assert config.include == ("*.py", "/data/") and config.exclude == ("*.tmp",)
    assert config.python.packages == ("numpy", "pillow>=10")
    assert config.python.lock_packages is True
    assert config.python.extra_index_url == ("https://extra.example/simple",)
    assert config.docker.system_packages == ("curl", "libgomp1")
    assert dict(config.docker.env) == {"LOG_LEVEL": "debug"}
    assert config.docker.setup_script == "setup.sh"
    assert dict(config.envs) == {"MODE": "fast"}


@pytest.mark.parametrize(
    ("body", "key", "allowed"),
    [
        ("service: 's:svc'\nservise: x\n", "servise", "allowed at the top level: service, name"),
        ("service: 's:svc'\npython: {pakages: [numpy]}\n", "python.pakages", "allowed here: packages"),
        ("service: 's:svc'\ndocker: {base: x}\n", "docker.base", "base_image, system_packages"),
        ("service: 's:svc'\npython: {packages: numpy}\n", "python.packages", "expected a list of strings"),
        (
            "service: 's:svc'\npython: {packages: [numpy, 3]}\n",
            r"python.packages\[1\]",
            "expected a non-empty",
        ),
        (
            "service: 's:svc'\npython: {lock_packages: 'yes'}\n",
            "python.lock_packages",
            "expected true or false",
        ),
        ("service: 's:svc'\ndocker: [a]\n", "docker", "expected a mapping with keys"),
        ("service: 's:svc'\nlabels: [a]\n", r"labels\[0\]", "NAME=VALUE"),
        ("service: 's:svc'\nenvs: {X: [1]}\n", "envs.X", "expected a string or number"),
        ("name: x\n", "service", "required"),
        ("service: digits\n", "service", "is not 'module:svc'"),
        ("service: 's:svc'\nname: Not_Valid!\n", "name", "lowercase letters"),
        (
            "service: 's:svc'\ndocker: {system_packages: ['curl; rm -rf /']}\n",
            r"docker.system_packages\[0\]",
            "apt",
        ),
        ("service: 's:svc'\nenvs: {'1X': a}\n", "envs.1X", "letters, digits and '_'"),
        ("- a list\n", r"\(top level\)", "expected a mapping"),
    ],
)
def test_errors_name_file_key_and_what_is_allowed(tmp_path: Path, body: str, key: str, allowed: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(BentofileError, match=rf"^{path}: {key}: .*{allowed}"):
        load_bentofile(path)


@pytest.mark.parametrize(
    "body",
    [
        "envs: {AWS_SECRET_ACCESS_KEY: abc}\n",
        "docker: {env: {HF_TOKEN: abc}}\n",
        "envs: [{name: DB_PASSWORD, value: x}]\n",
        "python: {index_url: 'https://user:s3cret@pypi.example/simple'}\n",
        "python: {extra_index_url: ['https://user:s3cret@pypi.example/simple']}\n",
    ],
)
def test_credentials_are_refused(tmp_path: Path, body: str) -> None:
    path = write(tmp_path, "service: 's:svc'\n" + body)
    with pytest.raises(BentofileError, match=r"credential|password") as info:
        load_bentofile(path)
    assert "s3cret" not in str(info.value) and "abc" not in str(info.value)


def test_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "service: [unclosed\n")
    with pytest.raises(BentofileError, match=rf"^{path}: not valid YAML"):
        load_bentofile(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BentofileError, match="no such file"):
        load_bentofile(tmp_path / "nope.yaml")
