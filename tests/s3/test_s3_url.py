"""S3 repository URLs in Triton's syntax: parsed without contacting anything."""

from __future__ import annotations

import pytest

from runnerkit.triton import Runner, S3ModelRepository, S3RepositoryError
from runnerkit.triton._s3 import S3Location


@pytest.mark.parametrize(
    ("url", "endpoint", "bucket", "prefix", "canonical"),
    [
        ("s3://bucket-1/path/to/repo", None, "bucket-1", "path/to/repo", "s3://bucket-1/path/to/repo"),
        ("s3://bucket-1", None, "bucket-1", "", "s3://bucket-1"),
        ("s3://bucket-1/repo/", None, "bucket-1", "repo", "s3://bucket-1/repo"),
        (
            "s3://minio.local:9000/b.x/repo",
            "http://minio.local:9000",
            "b.x",
            "repo",
            "s3://minio.local:9000/b.x/repo",
        ),
        ("s3://http://10.0.0.1:80/bkt/a//b", "http://10.0.0.1:80", "bkt", "a/b", "s3://10.0.0.1:80/bkt/a/b"),
        (
            "s3://https://s3.example.com:443/bkt/m",
            "https://s3.example.com:443",
            "bkt",
            "m",
            "s3://https://s3.example.com:443/bkt/m",
        ),
    ],
)
def test_triton_url_forms(url: str, endpoint: str | None, bucket: str, prefix: str, canonical: str) -> None:
    location = S3Location.parse(url)
    assert (location.endpoint, location.bucket, location.prefix) == (endpoint, bucket, prefix)
    assert location.url == canonical
    assert S3Location.parse(canonical) == location  # what tritonserver gets reads back the same


@pytest.mark.parametrize(
    "url",
    ["s3://", "s3:///repo", "s3://Upper_Case/repo", "s3://host:port/bucket", "s3://ab/x"],
)
def test_malformed_urls_name_the_accepted_forms(url: str) -> None:
    with pytest.raises(S3RepositoryError) as info:
        S3ModelRepository.from_url(url)
    assert info.value.kind == "bad-url"
    assert url in str(info.value)
    assert "s3://host:port/bucket/prefix" in str(info.value)


def test_runner_construction_contacts_nothing() -> None:
    # An endpoint nobody listens on: constructing the runner must neither fail nor wait.
    runner = Runner("lazy", model_repository="s3://127.0.0.1:9/bucket/repo")
    assert runner.model_repository == "s3://127.0.0.1:9/bucket/repo"
    assert not runner.is_started
