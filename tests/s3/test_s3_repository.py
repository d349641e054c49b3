"""Reading an S3 repository's index with boto3, and every error that stops serving before it starts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from runnerkit.triton import Runner, S3ModelRepository, S3RepositoryError
from runnerkit.triton._repository import LocalModelRepository, ModelRepositoryError
from runnerkit.triton._s3 import S3Location
from runnerkit.triton._server import free_port
from tests.s3.conftest import MotoS3, tritonservers_reading


def test_index_matches_the_local_repository(digits_url: str, example_repository: Path) -> None:
    remote = S3ModelRepository.from_url(digits_url).list_models()
    local = LocalModelRepository(example_repository).list_models()
    assert sorted(remote) == sorted(local)
    for name, model in remote.items():
        assert model.path is None
        assert model.versions == local[name].versions, name
        assert model.spec is not None and local[name].spec is not None
        assert model.spec.to_dict() == local[name].spec.to_dict(), name
    # docs/CONTRACTS.md: two versions of digits_onnx; the ensemble's version folder arrived as an object.
    assert remote["digits_onnx"].versions == (1, 2)
    assert remote["digits_pipeline"].versions == (1,)
    assert "1/model.onnx" in remote["digits_onnx"].files


def start_fails_before_launch(url: str, kind: str) -> S3RepositoryError:
    """Runner.start_sync raises the repository's error and never launches tritonserver."""
    runner = Runner("failing", model_repository=url)
    with pytest.raises(S3RepositoryError) as info:
        runner.start_sync()
    assert info.value.kind == kind
    assert not runner.is_started
    assert tritonservers_reading(S3Location.parse(url).url) == []
    return info.value


def test_no_credentials(digits_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    error = start_fails_before_launch(digits_url, "no-credentials")
    message = str(error)
    assert digits_url in message
    for what_to_do in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "docker run -e"):
        assert what_to_do in message


def test_unknown_profile(digits_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "nobody")
    with pytest.raises(S3RepositoryError) as info:
        S3ModelRepository.from_url(digits_url).list_models()
    assert info.value.kind == "no-credentials"
    assert "nobody" in str(info.value) and digits_url in str(info.value)


def test_bucket_not_found(moto_s3: MotoS3, aws_env: pytest.MonkeyPatch) -> None:
    url = moto_s3.url("no-such-bucket", "repo")
    error = start_fails_before_launch(url, "bucket-not-found")
    assert url in str(error) and "'no-such-bucket' does not exist" in str(error)


def test_empty_prefix(moto_s3: MotoS3, bucket: str) -> None:
    url = moto_s3.url(bucket, "nothing/here")
    error = start_fails_before_launch(url, "empty")
    assert url in str(error)
    assert "upload_model_repository" in str(error)


def test_not_a_model_repository(moto_s3: MotoS3, bucket: str) -> None:
    client = moto_s3.client()
    client.put_object(Bucket=bucket, Key="documents/readme.txt", Body=b"notes")
    client.put_object(Bucket=bucket, Key="documents/data/table.csv", Body=b"a,b\n")
    url = moto_s3.url(bucket, "documents")
    error = start_fails_before_launch(url, "not-a-repository")
    assert url in str(error)
    assert "<model>/config.pbtxt" in str(error) and "data" in str(error)


def test_a_model_folder_instead_of_its_repository(moto_s3: MotoS3, digits_url: str) -> None:
    with pytest.raises(S3RepositoryError) as info:
        S3ModelRepository.from_url(f"{digits_url}/digits_onnx").list_models()
    assert info.value.kind == "not-a-repository"
    assert f"use its parent, {digits_url}" in str(info.value)


def test_access_denied(moto_s3: MotoS3, digits_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto_s3.reader.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto_s3.reader.secret_key)
    error = start_fails_before_launch(digits_url, "access-denied")
    message = str(error)
    assert digits_url in message
    assert "s3:ListBucket on arn:aws:s3:::models" in message
    assert "s3:GetObject on arn:aws:s3:::models/digits/*" in message


def test_rejected_key(digits_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIANOTAREALKEY00000")
    error = start_fails_before_launch(digits_url, "invalid-credentials")
    assert digits_url in str(error) and "InvalidAccessKeyId" in str(error)


def test_endpoint_unreachable(aws_env: pytest.MonkeyPatch) -> None:
    url = f"s3://127.0.0.1:{free_port()}/models/repo"  # nothing listens there
    started = time.monotonic()
    error = start_fails_before_launch(url, "unreachable")
    assert time.monotonic() - started < 30  # bounded retries, no hang
    message = str(error)
    assert url in message and "http://127.0.0.1:" in message and "s3://https://host:port" in message


def test_ensemble_without_its_version_folder(moto_s3: MotoS3, bucket: str, example_repository: Path) -> None:
    # What a file-by-file copy (aws s3 cp --recursive / sync) leaves: no object for the empty folder.
    client = moto_s3.client()
    prefix = "copied"
    for path in example_repository.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and not path.name.startswith("."):
            client.upload_file(
                str(path), bucket, f"{prefix}/{path.relative_to(example_repository).as_posix()}"
            )
    url = moto_s3.url(bucket, prefix)
    error = start_fails_before_launch(url, "missing-version-folder")
    message = str(error)
    assert url in message and "digits_pipeline" in message
    assert f"--bucket {bucket} --key {prefix}/digits_pipeline/1/ --endpoint-url {moto_s3.endpoint}" in message

    # The fix the message gives makes the repository servable.
    client.put_object(Bucket=bucket, Key=f"{prefix}/digits_pipeline/1/")
    assert S3ModelRepository.from_url(url).list_models()["digits_pipeline"].versions == (1,)


def test_invalid_config_names_the_object(moto_s3: MotoS3, bucket: str) -> None:
    client = moto_s3.client()
    client.put_object(
        Bucket=bucket, Key="broken/model_a/config.pbtxt", Body=b"name: 'model_a' max_batch_size: ["
    )
    client.put_object(Bucket=bucket, Key="broken/model_a/1/model.py", Body=b"")
    url = moto_s3.url(bucket, "broken")
    with pytest.raises(ModelRepositoryError) as info:
        S3ModelRepository.from_url(url).list_models()
    assert f"{url}/model_a/config.pbtxt: invalid model configuration" in str(info.value)


def test_the_url_alone_decides_the_endpoint(
    moto_s3: MotoS3, digits_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tritonserver goes where the URL says: s3://bucket/prefix is AWS itself. boto3 must not be
    # sent to another endpoint by AWS_ENDPOINT_URL(_S3), or the index would not be Triton's.
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_s3.endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", moto_s3.endpoint)
    assert "digits_onnx" in S3ModelRepository.from_url(digits_url).list_models()
    # AWS is not reachable from the tests (or refuses these keys): an error, never moto's index
    with pytest.raises(S3RepositoryError) as info:
        S3ModelRepository.from_url("s3://models/digits").list_models()
    assert moto_s3.endpoint not in str(info.value)


@pytest.mark.parametrize(
    ("variables", "region"),
    [
        ({}, "us-east-1"),
        ({"AWS_REGION": "eu-west-3"}, "eu-west-3"),
        ({"AWS_DEFAULT_REGION": "ap-south-1"}, "ap-south-1"),
    ],
)
def test_region_for_tritonserver(
    digits_url: str, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], region: str
) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    env = S3ModelRepository.from_url(digits_url).server_env({"AWS_SESSION_TOKEN": "stale", "KEEP": "1"})
    assert env["AWS_DEFAULT_REGION"] == env["AWS_REGION"] == region
    assert env["KEEP"] == "1" and "AWS_SESSION_TOKEN" not in env  # no token resolved: a stale one goes
