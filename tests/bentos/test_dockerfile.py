"""The Dockerfile template: blocks a custom template extends, quoting, system packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from runnerkit.bentos import BentofileError, DockerOptions
from runnerkit.bentos._dockerfile import DockerfileContext, render_dockerfile, render_entrypoint


def context(**docker: object) -> DockerfileContext:
    return DockerfileContext(
        tag="app:v1",
        service="app.py:svc",
        runnerkit_version="0.1.0",
        docker=DockerOptions(**docker),  # type: ignore[arg-type]
        envs={"MODE": "fast"},
        labels={"team": "ml"},
        constraints=False,
        setup_script=None,
    )


def instructions(dockerfile: str) -> list[str]:
    return [line for line in dockerfile.splitlines() if line and not line.startswith((" ", "#"))]


def test_default_dockerfile() -> None:
    text = render_dockerfile(context(base_image="localhost/base:1", system_packages=("curl",)))
    lines = instructions(text)
    assert lines[0] == "ARG BASE_IMAGE=localhost/base:1" and lines[1] == "FROM ${BASE_IMAGE}"
    assert "apt-get install -y --no-install-recommends curl" in text
    assert 'ENV MODE="fast"' in lines
    assert "USER runnerkit" in lines and "EXPOSE 3000" in lines
    assert "/readyz" in text and "HEALTHCHECK" in text
    entrypoint = 'ENTRYPOINT ["/home/runnerkit/bento/env/docker/entrypoint.sh"]'
    assert 'CMD ["serve", "--production"]' in lines
    # the service runs as the non-root user
    assert lines.index("USER runnerkit") < lines.index(entrypoint)
    # labels change with every build: last, so that the layers before them stay cached
    assert lines[-2].startswith("LABEL ai.runnerkit.bento=") and lines[-1] == 'LABEL "team"="ml"'
    assert lines.index("COPY . /home/runnerkit/bento") < len(lines) - 2


def test_env_values_are_quoted_literally() -> None:
    text = render_dockerfile(context(env={"GREETING": 'say "hi" $HOME'}))
    assert 'ENV GREETING="say \\"hi\\" \\$HOME"' in text


def test_custom_template_extends_blocks(tmp_path: Path) -> None:
    template = tmp_path / "Dockerfile.template"
    template.write_text(
        "{% extends bento_base_template %}\n"
        "{% block SETUP_BENTO_COMPONENTS %}\n{{ super() }}\nRUN echo custom-step\n{% endblock %}\n"
    )
    text = render_dockerfile(context(), template)
    assert "RUN echo custom-step" in text
    assert text.index("COPY . /home/runnerkit/bento") < text.index("RUN echo custom-step")
    assert "HEALTHCHECK" in text  # the other blocks are kept


def test_broken_template_names_the_file(tmp_path: Path) -> None:
    template = tmp_path / "Dockerfile.template"
    template.write_text("{% extends bento_base_template %}\n{% block X %}\n")
    with pytest.raises(BentofileError, match=rf"docker.dockerfile_template: {template} \(line \d+\)") as info:
        render_dockerfile(context(), template, source="bentofile.yaml")
    assert "SETUP_BENTO_COMPONENTS" in str(info.value)  # says which blocks exist


def test_entrypoint_script() -> None:
    text = render_entrypoint(context())
    assert text.startswith("#!/bin/sh\n")
    assert 'runnerkit serve "$BENTO_PATH" --host 0.0.0.0' in text
    assert 'exec "$@"' in text
