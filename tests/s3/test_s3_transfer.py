"""runnerkit's upload helper (folder objects for empty folders) and the download used to bundle."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from runnerkit.triton import S3RepositoryError, download_model_repository, upload_model_repository
from runnerkit.triton._repository import ModelRepositoryError
from tests.s3.conftest import DIGITS_PREFIX, Keys, MotoS3


def repository_files(root: Path) -> dict[str, bytes]:
    """The files a repository is made of (no bytecode caches, no placeholder dot-files)."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and not path.name.startswith(".")
    }


def test_upload_writes_every_file_and_the_empty_version_folder(
    moto_s3: MotoS3, bucket: str, digits_url: str, example_repository: Path
) -> None:
    listing = moto_s3.client().list_objects_v2(Bucket=bucket, Prefix=f"{DIGITS_PREFIX}/")["Contents"]
    etags = {item["Key"][len(DIGITS_PREFIX) + 1 :]: item["ETag"].strip('"') for item in listing}
    local = repository_files(example_repository)
    assert {key for key in etags if not key.endswith("/")} == set(local)
    for key, content in local.items():
        assert etags[key] == hashlib.md5(content).hexdigest(), key
    # The ensemble's version folder holds only a placeholder locally: it becomes a folder object.
    assert "digits_pipeline/1/" in etags
    assert not any(".gitkeep" in key or "__pycache__" in key for key in etags)


def test_upload_checks_before_writing(
    moto_s3: MotoS3, bucket: str, example_repository: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "repo" / "model_a"
    (broken / "1").mkdir(parents=True)
    (broken / "config.pbtxt").write_text("max_batch_size: [")
    with pytest.raises(ModelRepositoryError, match="invalid model configuration"):
        upload_model_repository(tmp_path / "repo", moto_s3.url(bucket, "never"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelRepositoryError, match="no model folders"):
        upload_model_repository(tmp_path / "empty", moto_s3.url(bucket, "never"))
    assert "Contents" not in moto_s3.client().list_objects_v2(Bucket=bucket, Prefix="never/")
    with pytest.raises(S3RepositoryError) as info:
        upload_model_repository(example_repository, moto_s3.url("missing-bucket", "x"))
    assert info.value.kind == "bucket-not-found"


def _listing_user(moto_s3: MotoS3, bucket: str) -> Keys:
    """May list the bucket and read configurations, but no model file."""
    iam = moto_s3.client("iam")
    iam.create_user(UserName="lister")
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{bucket}"},
            {
                "Effect": "Allow",
                "Action": "s3:GetObject",
                "Resource": f"arn:aws:s3:::{bucket}/*/config.pbtxt",
            },
        ],
    }
    iam.put_user_policy(UserName="lister", PolicyName="list", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="lister")["AccessKey"]
    return Keys(key["AccessKeyId"], key["SecretAccessKey"])


def test_download_bundles_through_an_etag_cache(
    moto_s3: MotoS3,
    bucket: str,
    example_repository: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUNNERKIT_HOME", str(tmp_path / "home"))
    url = moto_s3.url(bucket, "bundled")
    upload_model_repository(example_repository, url)

    first = download_model_repository(url, tmp_path / "first")
    assert repository_files(first) == repository_files(example_repository)
    assert (first / "digits_pipeline" / "1").is_dir()  # the folder object became a folder

    # Without read access to the model files, a second download is served by the cache alone...
    lister = _listing_user(moto_s3, bucket)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", lister.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", lister.secret_key)
    second = download_model_repository(url, tmp_path / "second")
    assert repository_files(second) == repository_files(example_repository)

    # ...until an object changes: its new ETag misses the cache, and the read is refused.
    changed = "bundled/digits_postprocess/1/model.py"
    moto_s3.client().put_object(Bucket=bucket, Key=changed, Body=b"# changed\n")
    with pytest.raises(S3RepositoryError) as info:
        download_model_repository(url, tmp_path / "third")
    assert info.value.kind == "access-denied" and "digits_postprocess/1/model.py" in str(info.value)
    assert not (tmp_path / "third").exists()  # nothing half-written

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto_s3.admin.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto_s3.admin.secret_key)
    fourth = download_model_repository(url, tmp_path / "fourth")
    assert (fourth / "digits_postprocess" / "1" / "model.py").read_bytes() == b"# changed\n"


def test_download_refuses_a_non_empty_destination(digits_url: str, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(ModelRepositoryError, match="not empty"):
        download_model_repository(digits_url, tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"
