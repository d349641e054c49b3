"""Model repositories on S3 (or an S3-compatible server), in Triton's own URL syntax.

runnerkit reads the repository's index itself (boto3: the models, their `config.pbtxt`, their
versions) so that model attributes and input validation work before a server runs, and checks
everything it can before tritonserver starts, so that each failure names the URL and the fix.
tritonserver then reads the models from S3 itself; the credentials runnerkit resolved reach it
through its environment only (never a file).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
from google.protobuf import text_format

from runnerkit._settings import cache_dir
from runnerkit.triton._model_config import ModelSpec
from runnerkit.triton._repository import ModelRepositoryError, RepositoryModel

logger = logging.getLogger("runnerkit.triton")

# Triton's own grammar (its S3 filesystem's regex): an endpoint is recognised by `host:port`.
_ENDPOINT_URL = re.compile(
    r"^s3://(?P<scheme>https?://)?(?P<host>[0-9A-Za-z\-.]+):(?P<port>[0-9]+)/(?P<bucket>[^/]+)(?P<path>/.*)?$"
)
_AWS_URL = re.compile(r"^s3://(?P<bucket>[^/:]+)(?P<path>/.*)?$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
URL_FORMS = "s3://bucket/prefix, s3://host:port/bucket/prefix (http) or s3://https://host:port/bucket/prefix"

# What tritonserver's AWS SDK would read; runnerkit replaces them with what boto3 resolved.
_CREDENTIAL_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    # the URL alone says where the repository is (newer AWS SDKs read these)
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
)
DEFAULT_REGION = "us-east-1"
CONFIG_FILE = "config.pbtxt"


class S3RepositoryError(ModelRepositoryError):
    """An S3 model repository that cannot be served; `kind` says which check failed."""

    def __init__(self, url: str, kind: str, message: str) -> None:
        super().__init__(f"S3 model repository {url}: {message}")
        self.url = url
        self.kind = kind


@attrs.frozen
class S3Location:
    """Where a repository lives: the endpoint (None for AWS itself), the bucket and the prefix."""

    bucket: str
    prefix: str = ""  # no leading or trailing slash; "" is the bucket's root
    endpoint: str | None = None  # "http://host:port" or "https://host:port"

    @classmethod
    def parse(cls, url: str) -> S3Location:
        match = _ENDPOINT_URL.match(url)
        if match:
            scheme = match["scheme"] or "http://"
            endpoint: str | None = f"{scheme}{match['host']}:{match['port']}"
        else:
            match = _AWS_URL.match(url)
            endpoint = None
        if match is None:
            raise S3RepositoryError(url, "bad-url", f"not an S3 repository URL; expected {URL_FORMS}")
        bucket = match["bucket"]
        if not _BUCKET.match(bucket):
            raise S3RepositoryError(
                url,
                "bad-url",
                f"{bucket!r} is not a valid bucket name (3-63 lowercase letters, digits, '.' and '-'); "
                f"expected {URL_FORMS}",
            )
        prefix = "/".join(part for part in (match["path"] or "").split("/") if part)
        return cls(bucket, prefix, endpoint)

    @property
    def url(self) -> str:
        """The location in Triton's syntax (tritonserver's --model-repository)."""
        if self.endpoint is None:
            host = ""
        elif self.endpoint.startswith("https://"):
            host = self.endpoint + "/"
        else:
            host = self.endpoint.removeprefix("http://") + "/"
        return f"s3://{host}{self.bucket}" + (f"/{self.prefix}" if self.prefix else "")

    def key(self, relative: str) -> str:
        return f"{self.prefix}/{relative}" if self.prefix else relative

    @property
    def list_prefix(self) -> str:
        return f"{self.prefix}/" if self.prefix else ""

    def cli_hint(self) -> str:
        """The `aws` CLI options that reach this endpoint, for messages."""
        return "" if self.endpoint is None else f" --endpoint-url {self.endpoint}"


@attrs.frozen
class S3Object:
    key: str  # relative to the repository's prefix
    etag: str
    size: int

    @property
    def is_folder(self) -> bool:
        return self.key.endswith("/")


@attrs.frozen
class S3Access:
    """Credentials and region as boto3 resolved them: what both boto3 and tritonserver use."""

    access_key: str = attrs.field(repr=False)
    secret_key: str = attrs.field(repr=False)
    token: str | None = attrs.field(repr=False)
    region: str
    method: str  # where boto3 found them: env, shared-credentials-file, iam-role, ...
    session: Any = attrs.field(default=None, eq=False, repr=False)  # boto3 session that resolved them

    def env(self) -> dict[str, str]:
        values = {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }
        if self.token:
            values["AWS_SESSION_TOKEN"] = self.token
        return values


def resolve_access(url: str) -> S3Access:
    """Credentials from the standard AWS places (environment, AWS_PROFILE, shared files, roles)."""
    import boto3
    import botocore.exceptions
    from botocore.credentials import RefreshableCredentials

    try:
        # A session of its own: boto3's default one keeps the AWS files it read first.
        session = boto3.Session()
        credentials = session.get_credentials()
    except botocore.exceptions.ProfileNotFound as exc:
        raise S3RepositoryError(
            url,
            "no-credentials",
            f"{exc}; set AWS_PROFILE to a profile of your shared credentials file "
            "(~/.aws/credentials, or $AWS_SHARED_CREDENTIALS_FILE), or unset it",
        ) from exc
    except botocore.exceptions.BotoCoreError as exc:
        raise S3RepositoryError(url, "no-credentials", f"cannot resolve AWS credentials: {exc}") from exc
    if credentials is None:
        raise S3RepositoryError(
            url,
            "no-credentials",
            "no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (plus "
            "AWS_SESSION_TOKEN for temporary credentials), or AWS_PROFILE naming a profile of "
            "~/.aws/credentials; in a container pass them at run time (docker run -e AWS_ACCESS_KEY_ID "
            "-e AWS_SECRET_ACCESS_KEY ...)",
        )
    frozen = credentials.get_frozen_credentials()
    if isinstance(credentials, RefreshableCredentials):
        # tritonserver gets a snapshot: it reads S3 when it loads models (at start, and on explicit
        # loads), so loads after the snapshot expires fail until the runner restarts.
        logger.warning(
            "%s: AWS credentials from %s are temporary; tritonserver gets the current ones, which "
            "expire, so later model loads from S3 need a restart",
            url, credentials.method,
        )  # fmt: skip
    return S3Access(
        access_key=frozen.access_key,
        secret_key=frozen.secret_key,
        token=frozen.token,
        # botocore reads AWS_DEFAULT_REGION and the profile; the SDKs of other languages AWS_REGION.
        region=session.region_name or os.environ.get("AWS_REGION") or DEFAULT_REGION,
        method=credentials.method,
        session=session,
    )


class S3ModelRepository:
    """A Triton model repository under an S3 prefix: `Runner(name, model_repository="s3://...")`."""

    def __init__(self, location: S3Location, url: str | None = None) -> None:
        self.location = location
        self.url = url or location.url
        self._access: S3Access | None = None
        self._client: Any = None
        self._objects: tuple[S3Object, ...] | None = None
        self._bucket_region: str | None = None  # as AWS reports it when listing

    @classmethod
    def from_url(cls, url: str) -> S3ModelRepository:
        """Parse only: nothing is contacted until the models are listed."""
        return cls(S3Location.parse(url), url)

    @property
    def uri(self) -> str:
        return self.location.url

    def __repr__(self) -> str:
        return f"S3ModelRepository({self.url!r})"

    # -- access ---------------------------------------------------------------------------------

    @property
    def access(self) -> S3Access:
        if self._access is None:
            self._access = resolve_access(self.url)
        return self._access

    @property
    def client(self) -> Any:
        """A boto3 S3 client for this repository's endpoint, with bounded timeouts and retries."""
        if self._client is None:
            from botocore.config import Config

            access = self.access
            config = Config(
                connect_timeout=5,
                read_timeout=60,
                retries={"max_attempts": 3, "mode": "standard"},
                # S3-compatible servers on host:port rarely resolve bucket sub-domains.
                s3={"addressing_style": "path"} if self.location.endpoint else {},
                # The URL alone says where the repository is, as it does for tritonserver:
                # AWS_ENDPOINT_URL(_S3) must not send boto3 elsewhere.
                ignore_configured_endpoint_urls=True,
            )
            try:
                self._client = access.session.client(
                    "s3", endpoint_url=self.location.endpoint, region_name=access.region, config=config
                )
            except Exception as exc:
                raise self.explain(exc, "creating the S3 client") from exc
        return self._client

    def server_env(self, base: Mapping[str, str]) -> dict[str, str]:
        """`base` with the resolved credentials and region, for the tritonserver process only."""
        env = {k: v for k, v in base.items() if k not in _CREDENTIAL_VARS}
        env.update(self.access.env())
        if self.location.endpoint is None and self._bucket_region not in (None, self.access.region):
            # boto3 follows S3's redirects to the bucket's region; tritonserver's SDK needs it given.
            logger.info("%s: bucket region %s, given to tritonserver", self.url, self._bucket_region)
            env["AWS_DEFAULT_REGION"] = env["AWS_REGION"] = str(self._bucket_region)
        return env

    def explain(self, exc: Exception, action: str) -> S3RepositoryError:
        """A boto3/botocore failure as an error that names the URL and what to do."""
        return translate_error(exc, self.url, self.location, self.access.method, action)

    # -- the index --------------------------------------------------------------------------------

    def objects(self) -> tuple[S3Object, ...]:
        """Every object under the prefix (keys relative to it), listed once."""
        if self._objects is None:
            self._objects = tuple(self._list_objects())
        return self._objects

    def _list_objects(self) -> Iterable[S3Object]:
        base = self.location.list_prefix
        found: list[S3Object] = []
        try:
            paginator = self.client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.location.bucket, Prefix=base):
                headers = page.get("ResponseMetadata", {}).get("HTTPHeaders", {})
                self._bucket_region = headers.get("x-amz-bucket-region") or self._bucket_region
                for item in page.get("Contents", ()):
                    relative = item["Key"][len(base) :]
                    if relative:
                        found.append(S3Object(relative, str(item.get("ETag", "")).strip('"'), item["Size"]))
        except Exception as exc:
            raise self.explain(exc, "listing the repository") from exc
        return found

    def read_text(self, relative: str) -> str:
        try:
            response = self.client.get_object(Bucket=self.location.bucket, Key=self.location.key(relative))
            return str(response["Body"].read().decode("utf-8"))
        except Exception as exc:
            raise self.explain(exc, f"reading {relative}") from exc

    def list_models(self) -> dict[str, RepositoryModel]:
        objects = self.objects()
        if not objects:
            raise S3RepositoryError(
                self.url,
                "empty",
                f"no objects under s3://{self.location.bucket}/{self.location.list_prefix}; fix the "
                "prefix, or upload a model repository there with "
                f"runnerkit.triton.upload_model_repository('model_repository', {self.url!r}), which "
                "also creates the empty version folders Triton needs",
            )
        by_model: dict[str, list[str]] = {}
        for obj in objects:
            top, sep, rest = obj.key.partition("/")
            if sep and not top.startswith("."):
                by_model.setdefault(top, []).append(rest)
        models = {
            name: self._read_model(name, keys)
            for name, keys in sorted(by_model.items())
            if CONFIG_FILE in keys or _versions(keys)
        }
        if not models:
            raise S3RepositoryError(self.url, "not-a-repository", self._not_a_repository_hint(objects))
        for name, keys in by_model.items():
            if name not in models:
                logger.warning(
                    "%s: folder %r has neither %s nor a version folder; Triton will fail to load it",
                    self.url, name, CONFIG_FILE,
                )  # fmt: skip
                models[name] = RepositoryModel(name, None, (), None, _files(keys))
        return dict(sorted(models.items()))

    def _read_model(self, name: str, keys: list[str]) -> RepositoryModel:
        spec = None
        if CONFIG_FILE in keys:
            text = self.read_text(f"{name}/{CONFIG_FILE}")
            try:
                spec = ModelSpec.from_text(text, name)
            except text_format.ParseError as exc:
                raise ModelRepositoryError(
                    f"{self.url}/{name}/{CONFIG_FILE}: invalid model configuration: {exc}"
                ) from exc
        versions = _versions(keys)
        if spec is not None and spec.is_ensemble and not versions:
            raise S3RepositoryError(self.url, "missing-version-folder", self._version_folder_hint(name, spec))
        return RepositoryModel(name, spec, versions, None, _files(keys))

    def _version_folder_hint(self, name: str, spec: ModelSpec) -> str:
        policy = spec.config.version_policy
        version = min(policy.specific.versions) if policy.HasField("specific") else 1
        key = self.location.key(f"{name}/{version}/")
        return (
            f"ensemble {name!r} has no version folder. An ensemble's version folder is empty, and "
            "S3 has no empty folders: uploads that copy files only (aws s3 cp/sync) leave it out, "
            "and Triton then finds no version to load. Create the folder object: "
            f"`aws s3api put-object --bucket {self.location.bucket} --key {key}"
            f"{self.location.cli_hint()}` (boto3: put_object(Bucket={self.location.bucket!r}, "
            f"Key={key!r})), or upload the repository with "
            "runnerkit.triton.upload_model_repository, which creates it"
        )

    def _not_a_repository_hint(self, objects: tuple[S3Object, ...]) -> str:
        top_level = sorted({obj.key.split("/", 1)[0] for obj in objects})
        shown = ", ".join(top_level[:8]) + (", ..." if len(top_level) > 8 else "")
        text = (
            f"not a model repository: expected one folder per model ({self.location.list_prefix}"
            f"<model>/{CONFIG_FILE}, {self.location.list_prefix}<model>/1/...), found {shown}"
        )
        if CONFIG_FILE in top_level or any(name.isdigit() for name in top_level):
            parent = self.location.prefix.rpartition("/")[0]
            parent_url = attrs.evolve(self.location, prefix=parent).url
            text += f"; this looks like a single model's folder: use its parent, {parent_url}"
        return text

    # -- bundling -------------------------------------------------------------------------------

    def download(self, destination: str | os.PathLike[str]) -> Path:
        """Copy the whole repository into `destination` (which must not exist, or be empty).

        Files come through a local cache keyed by each object's ETag ($RUNNERKIT_HOME/cache/s3),
        so rebuilding a bento downloads only what changed. Folder objects become (empty) folders.
        """
        models = self.list_models()  # every check, and the clear errors, before anything is written
        target = Path(destination).expanduser().resolve()
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise ModelRepositoryError(
                f"cannot download {self.url} into {target}: it exists and is not empty"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-download-", dir=target.parent))
        try:
            for obj in self.objects():
                if obj.key.split("/", 1)[0] not in models:
                    continue  # files beside the model folders are not part of the repository
                local = staging / obj.key
                if obj.is_folder:
                    local.mkdir(parents=True, exist_ok=True)
                    continue
                local.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(self._cached(obj), local)
            if target.exists():
                target.rmdir()
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return target

    def _cached(self, obj: S3Object) -> Path:
        where = f"{self.location.endpoint or 'aws'}|{self.location.bucket}|{self.location.key(obj.key)}"
        folder = cache_dir("s3", hashlib.sha256(where.encode()).hexdigest()[:24])
        cached = folder / re.sub(r"[^0-9A-Za-z\-]", "_", obj.etag or "no-etag")
        if cached.is_file() and cached.stat().st_size == obj.size:
            return cached
        fd, partial = tempfile.mkstemp(dir=folder, prefix=".partial-")
        os.close(fd)
        try:
            self.client.download_file(self.location.bucket, self.location.key(obj.key), partial)
            _check_etag(Path(partial), obj, self.url)
            os.replace(partial, cached)
        except Exception as exc:
            Path(partial).unlink(missing_ok=True)
            if isinstance(exc, ModelRepositoryError):
                raise
            raise self.explain(exc, f"downloading {obj.key}") from exc
        return cached


def download_model_repository(url: str, destination: str | os.PathLike[str]) -> Path:
    """Download the S3 model repository at `url` into the local folder `destination`."""
    return S3ModelRepository.from_url(url).download(destination)


def _versions(keys: Iterable[str]) -> tuple[int, ...]:
    # "1/" (a folder object) and "1/model.onnx" both make version 1; a file named "1" does not.
    return tuple(sorted({int(k.split("/", 1)[0]) for k in keys if "/" in k and k.split("/", 1)[0].isdigit()}))


def _files(keys: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(k for k in keys if k and not k.endswith("/")))


def _check_etag(path: Path, obj: S3Object, url: str) -> None:
    # A single-part upload's ETag is the MD5 of the content; multipart ETags ("...-N") are not.
    if not re.fullmatch(r"[0-9a-f]{32}", obj.etag):
        return
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != obj.etag:
        raise ModelRepositoryError(f"{url}/{obj.key}: downloaded content does not match its ETag; try again")


_DENIED = {"AccessDenied", "AllAccessDisabled", "403", "Forbidden"}
_BAD_CREDENTIALS = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "InvalidClientTokenId",
}
_WRONG_REGION = {"PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException"}


def translate_error(
    exc: Exception, url: str, location: S3Location, method: str, action: str
) -> S3RepositoryError:
    import botocore.exceptions as bce

    bucket = location.bucket
    if isinstance(exc, S3RepositoryError):
        return exc
    if isinstance(exc, (bce.EndpointConnectionError, bce.ConnectTimeoutError, bce.ReadTimeoutError)):
        where = location.endpoint or "AWS S3"
        hint = (
            "check the host and port, that the S3 server runs and is reachable from here, and the "
            "scheme (s3://host:port/... is http, s3://https://host:port/... is https)"
            if location.endpoint
            else "check the network connection and proxy settings"
        )
        return S3RepositoryError(url, "unreachable", f"cannot reach the S3 endpoint {where} ({exc}); {hint}")
    if isinstance(exc, bce.SSLError):
        return S3RepositoryError(
            url,
            "unreachable",
            f"TLS failed with {location.endpoint or 'AWS S3'} ({exc}); for a plain-http server use "
            "s3://host:port/..., for a private CA set AWS_CA_BUNDLE",
        )
    if isinstance(exc, bce.NoCredentialsError):
        return S3RepositoryError(url, "no-credentials", f"no AWS credentials found ({exc})")
    if isinstance(exc, bce.ClientError):
        error: Mapping[str, Any] = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in ("NoSuchBucket",) or (code in ("404", "NotFound") and "bucket" in action):
            return S3RepositoryError(
                url,
                "bucket-not-found",
                f"bucket {bucket!r} does not exist"
                + (f" at {location.endpoint}" if location.endpoint else "")
                + "; check the bucket name in the URL (or create the bucket and upload the repository)",
            )
        if code in _BAD_CREDENTIALS:
            return S3RepositoryError(
                url,
                "invalid-credentials",
                f"the server rejected the credentials (from {method}) while {action}: {code}; "
                "check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), "
                "or the AWS_PROFILE in use",
            )
        if code in _DENIED or status == 403:
            resource = f"arn:aws:s3:::{bucket}"
            return S3RepositoryError(
                url,
                "access-denied",
                f"access denied while {action} ({code or status}) for the credentials from {method}; "
                f"they need s3:ListBucket on {resource} and s3:GetObject on "
                f"{resource}/{location.list_prefix}*: grant those, or use credentials that have them",
            )
        if code in _WRONG_REGION:
            region = (
                exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("x-amz-bucket-region")
            )
            return S3RepositoryError(
                url,
                "wrong-region",
                f"bucket {bucket!r} is in another region"
                + (f" ({region})" if region else "")
                + "; set AWS_DEFAULT_REGION (or the profile's region) to the bucket's region",
            )
        message = error.get("Message") or str(exc)
        return S3RepositoryError(url, "error", f"S3 answered {code or status} while {action}: {message}")
    if isinstance(exc, bce.BotoCoreError):
        return S3RepositoryError(url, "error", f"{action} failed: {exc}")
    return S3RepositoryError(url, "error", f"{action} failed: {exc!r}")
