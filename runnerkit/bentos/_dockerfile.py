"""The bento's Dockerfile and entrypoint, rendered from Jinja2 templates with named blocks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import jinja2

from runnerkit.bentos._bentofile import BentofileError, DockerOptions

BENTO_USER = "runnerkit"
BENTO_UID = 1034
BENTO_HOME = f"/home/{BENTO_USER}"
BENTO_PATH = f"{BENTO_HOME}/bento"
BASE_TEMPLATE = "Dockerfile.j2"
ENTRYPOINT_TEMPLATE = "entrypoint.sh.j2"
SETUP_SCRIPT = "env/docker/setup_script"
BLOCKS = (
    "SETUP_BENTO_BASE_IMAGE",
    "SETUP_BENTO_SYSTEM_PACKAGES",
    "SETUP_BENTO_USER",
    "SETUP_BENTO_ENVARS",
    "SETUP_BENTO_PYTHON",
    "SETUP_BENTO_COMPONENTS",
    "SETUP_BENTO_ENTRYPOINT",
)


def docker_quote(value: object) -> str:
    """A Dockerfile ENV/LABEL value: double-quoted, with `$` kept literal (no substitution)."""
    return json.dumps(str(value)).replace("$", "\\$")


def _environment(extra_dir: Path | None = None) -> jinja2.Environment:
    loaders: list[jinja2.BaseLoader] = [jinja2.PackageLoader("runnerkit.bentos", "templates")]
    if extra_dir is not None:
        loaders.insert(0, jinja2.FileSystemLoader(str(extra_dir)))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # a Dockerfile, not HTML
    )
    env.filters["docker_quote"] = docker_quote
    return env


@attrs.frozen
class DockerfileContext:
    """The values the templates see."""

    tag: str
    service: str
    runnerkit_version: str
    docker: DockerOptions
    envs: Mapping[str, str]
    labels: Mapping[str, str]
    constraints: bool
    setup_script: str | None  # relative to the bento root

    def variables(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "service": self.service,
            "runnerkit_version": self.runnerkit_version,
            "base_image": self.docker.base_image,
            "system_packages": list(self.docker.system_packages),
            # the service's envs first; docker.env (image-specific) wins on a clash
            "env": {**self.envs, **self.docker.env},
            "labels": dict(self.labels),
            "constraints": self.constraints,
            "setup_script": self.setup_script,
            "bento_user": BENTO_USER,
            "bento_uid": BENTO_UID,
            "bento_home": BENTO_HOME,
            "bento_path": BENTO_PATH,
        }


def render_dockerfile(
    context: DockerfileContext, template_file: Path | None = None, *, source: str = ""
) -> str:
    """The default Dockerfile, or `template_file` (which extends it through its blocks)."""
    variables = context.variables()
    try:
        if template_file is None:
            return _environment().get_template(BASE_TEMPLATE).render(variables)
        if not template_file.is_file():
            raise BentofileError(source, "docker.dockerfile_template", f"no such file {template_file}")
        env = _environment(template_file.parent)
        base = env.get_template(BASE_TEMPLATE)
        template = env.from_string(template_file.read_text(encoding="utf-8"))
        return template.render({**variables, "bento_base_template": base})
    except jinja2.TemplateError as exc:
        where = f"{template_file}" if template_file else BASE_TEMPLATE
        line = f" (line {exc.lineno})" if isinstance(exc, jinja2.TemplateSyntaxError) else ""
        raise BentofileError(
            source,
            "docker.dockerfile_template",
            f"{where}{line}: {exc}; a template starts with `{{% extends bento_base_template %}}` and "
            f"overrides blocks among {', '.join(BLOCKS)}",
        ) from exc


def render_entrypoint(context: DockerfileContext) -> str:
    return _environment().get_template(ENTRYPOINT_TEMPLATE).render(context.variables())
