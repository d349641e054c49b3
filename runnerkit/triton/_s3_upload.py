"""Uploading a local model repository to S3 so that tritonserver can serve it from there.

Unlike a plain file copy (`aws s3 cp --recursive`, `aws s3 sync`), this keeps the empty folders
Triton needs, above all an ensemble's version folder: S3 has no empty folders, so each becomes
a folder object (`<prefix>/<model>/1/`), without which Triton finds no version to load.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from runnerkit.triton._repository import LocalModelRepository, ModelRepositoryError
from runnerkit.triton._s3 import S3ModelRepository

logger = logging.getLogger("runnerkit.triton")

# Left out: bytecode caches (the python backend writes them next to model.py) and dot-files
# such as .gitkeep, which only stand in for the folder objects created here.
_SKIPPED_DIRS = frozenset({"__pycache__"})


def upload_model_repository(source: str | os.PathLike[str], url: str) -> list[str]:
    """Upload the model repository folder `source` to the S3 location `url` (the bucket must exist).

    Returns the keys written. Every model is checked first (as for a local runner), so a broken
    configuration is reported before anything is uploaded.
    """
    local = LocalModelRepository(Path(source))
    models = local.list_models()
    if not models:
        raise ModelRepositoryError(
            f"{local.path} holds no model folders to upload (expected <model>/config.pbtxt, <model>/1/...)"
        )
    repository = S3ModelRepository.from_url(url)
    location = repository.location
    client = repository.client
    try:
        client.head_bucket(Bucket=location.bucket)
    except Exception as exc:
        raise repository.explain(exc, "checking the bucket") from exc
    written: list[str] = []
    for model in models.values():
        assert model.path is not None
        for folder, dirs, files in os.walk(model.path):
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
            kept = sorted(f for f in files if not f.startswith(".") and not f.endswith(".pyc"))
            relative = Path(folder).relative_to(local.path).as_posix()
            for name in kept:
                key = location.key(f"{relative}/{name}")
                try:
                    client.upload_file(os.path.join(folder, name), location.bucket, key)
                except Exception as exc:
                    raise repository.explain(exc, f"uploading {relative}/{name}") from exc
                written.append(key)
            if not kept and not dirs:
                key = location.key(f"{relative}/")
                try:
                    client.put_object(Bucket=location.bucket, Key=key, Body=b"")
                except Exception as exc:
                    raise repository.explain(exc, f"creating the folder object {relative}/") from exc
                written.append(key)
    logger.info("uploaded %d objects of %s to %s", len(written), local.path, repository.uri)
    return written
