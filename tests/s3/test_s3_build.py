"""`runnerkit build` with an S3 repository: referenced by default, bundled on request, and no
credential in the bento either way."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pytest
import yaml

from runnerkit.bentos import Bento, BentoBuildError, BentoStore, build, build_bentofile
from runnerkit.cli import main as runnerkit_main
from runnerkit.triton._repository import LocalModelRepository
from tests.s3.conftest import AWS_VARIABLES, MotoS3


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def repository_files(root: Path) -> dict[str, bytes]:
    return {
        rel: data
        for rel, data in files_under(root).items()
        if "__pycache__" not in rel and not Path(rel).name.startswith(".")
    }


def project(root: Path, url: str, bentofile: str = "") -> str:
    """A build context whose service has one runner on `url`; returns the service target."""
    root.mkdir(parents=True)
    module = f"s3svc_{uuid.uuid4().hex[:10]}"  # unique: in-process imports must not hit a cache
    (root / f"{module}.py").write_text(
        textwrap.dedent(
            f"""\
            import runnerkit
            from runnerkit import io as rio

            triton_runner = runnerkit.triton.Runner("triton_runner", model_repository={url!r})
            svc = runnerkit.Service("digits_s3", runners=[triton_runner])


            @svc.api(input=rio.JSON(), output=rio.JSON())
            async def models(_):
                return triton_runner.model_names
            """
        )
    )
    (root / "bentofile.yaml").write_text(f"service: '{module}:svc'\n{bentofile}")
    return f"{module}:svc"


def assert_no_credentials(bento: Bento, moto_s3: MotoS3) -> None:
    secrets = [moto_s3.admin.access_key, moto_s3.admin.secret_key]
    for rel, data in files_under(bento.path).items():
        for secret in secrets:
            assert secret.encode() not in data, f"{rel} holds a credential"
    dockerfile = bento.path / "env" / "docker" / "Dockerfile"
    assert dockerfile.is_file() and b"AWS_SECRET_ACCESS_KEY" not in dockerfile.read_bytes()


def test_build_references_the_repository_without_contacting_s3(
    digits_url: str, moto_s3: MotoS3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = project(tmp_path / "ctx", digits_url)
    bento = build(target, build_ctx=tmp_path / "ctx", store=BentoStore(tmp_path / "store"), quiet=True)
    assert bento.runners[0]["model_repository"] == {"kind": "s3", "url": digits_url}
    assert bento.bundled_repositories() == {}
    assert not (bento.src_dir / "model_repositories").exists()
    assert_no_credentials(bento, moto_s3)
    readme = (bento.path / "README.md").read_text()
    assert digits_url in readme and "-e AWS_ACCESS_KEY_ID -e AWS_SECRET_ACCESS_KEY" in readme

    # Referencing needs no access: the same build works with no credentials at all.
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    again = build(target, build_ctx=tmp_path / "ctx", store=BentoStore(tmp_path / "store2"), quiet=True)
    assert again.runners[0]["model_repository"] == {"kind": "s3", "url": digits_url}


def test_bentofile_key_bundles_the_repository(
    digits_url: str, moto_s3: MotoS3, example_repository: Path, tmp_path: Path
) -> None:
    ctx = tmp_path / "ctx"
    project(ctx, digits_url, bentofile="bundle_models: true\n")
    store = BentoStore(tmp_path / "store")
    bento = build_bentofile(ctx / "bentofile.yaml", build_ctx=ctx, store=store, quiet=True)
    repository = bento.runners[0]["model_repository"]
    assert repository == {"kind": "bundled", "path": "model_repositories/triton_runner", "source": digits_url}
    bundled = bento.bundled_repositories()["triton_runner"]
    assert repository_files(bundled) == repository_files(example_repository)
    assert (bundled / "digits_pipeline" / "1").is_dir()  # the ensemble's empty version folder
    described = {m["name"]: m["versions"] for m in bento.runners[0]["models"]}
    assert described == {n: list(m.versions) for n, m in LocalModelRepository(bundled).list_models().items()}
    assert_no_credentials(bento, moto_s3)


def test_cli_flag_bundles_and_errors_name_the_url(
    digits_url: str, moto_s3: MotoS3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = tmp_path / "ctx"
    project(ctx, digits_url)
    monkeypatch.setenv("RUNNERKIT_HOME", str(tmp_path / "home"))
    assert runnerkit_main(["build", str(ctx), "--bundle-models", "--version", "bundled", "-q"]) == 0
    info = yaml.safe_load((tmp_path / "home" / "bentos" / "digits_s3" / "bundled" / "bento.yaml").read_text())
    assert info["runners"][0]["model_repository"]["kind"] == "bundled"

    # Bundling reads S3, so it needs access; the error names the URL and what is missing.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto_s3.reader.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto_s3.reader.secret_key)
    with pytest.raises(BentoBuildError) as info_error:
        build_bentofile(
            ctx / "bentofile.yaml", build_ctx=ctx, store=BentoStore(tmp_path / "s"), bundle_models=True
        )
    assert digits_url in str(info_error.value) and "access denied" in str(info_error.value)
