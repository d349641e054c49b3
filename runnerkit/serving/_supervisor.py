"""The tritonservers of production serving: launched once, watched, restarted on the same ports."""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence

from runnerkit.exceptions import TritonStartError
from runnerkit.serving._logging import TritonLogRelay
from runnerkit.triton._runner import Runner, is_explicit, option_key
from runnerkit.triton._server import LOOPBACK, TritonServerProcess

logger = logging.getLogger("runnerkit.serve")

_POLL_INTERVAL = 0.25
_INDEX_INTERVAL = 5.0  # how often the set of loaded models is noted (explicit mode)
_FIRST_BACKOFF = 0.5
_MAX_BACKOFF = 30.0
_STABLE_AFTER = 60.0  # a server up this long has its backoff reset
_HTTP_TIMEOUT = 10.0


class SupervisedServer:
    """One runner's tritonserver and what its supervisor knows about it."""

    def __init__(self, runner: Runner, arguments: Sequence[str]) -> None:
        self.runner = runner
        self.relay = TritonLogRelay(runner.name)
        # A failure may come after 400 lines of usage text: keep more than the default tail.
        self.process: TritonServerProcess = runner.prepare_server(
            arguments, on_log_line=self.relay, log_lines=1000
        )
        self.arguments = self.process.extra_args  # as first launched
        self.explicit = is_explicit(self.arguments)
        self.loaded: set[str] = set()  # models seen READY (explicit mode): loaded again after a restart
        self.restarts = 0
        self.up_since = 0.0

    @property
    def name(self) -> str:
        return self.runner.name

    def restart_arguments(self) -> tuple[str, ...]:
        """The options of a restart: in explicit mode, --load-model names the models that were
        loaded (those loaded at run time too), so that the server, and so /readyz, is ready only
        once they are loaded again."""
        if not self.explicit or not self.loaded:
            return self.arguments
        kept = [a for a in self.arguments if option_key(a) != "load-model"]
        return (*kept, *(f"--load-model={model}" for model in sorted(self.loaded)))

    def addresses(self) -> dict[str, str]:
        assert self.process.addresses is not None
        a = self.process.addresses
        return {"grpc": a.grpc_url, "http": a.http_url, "metrics": a.metrics_url}

    def start_error(self, what: str, exc: TritonStartError) -> TritonStartError:
        """tritonserver's own message (not its usage text), with the options it was given."""
        given = " ".join(self.process.extra_args) or "(none)"
        tail = self.relay.recent().strip() or exc.log_tail
        return TritonStartError(
            f"runner {self.name!r}: {what}: {exc.args[0].splitlines()[0]}\n"
            f"tritonserver options given: {given}",
            log_tail=tail,
            exit_code=exc.exit_code,
        )

    # -- the HTTP endpoint, for the model index and explicit loads --------------------------------

    def _request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        assert self.process.addresses is not None
        conn = http.client.HTTPConnection(LOOPBACK, self.process.addresses.http_port, timeout=_HTTP_TIMEOUT)
        try:
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def ready_models(self) -> set[str]:
        status, body = self._request("POST", "/v2/repository/index", b"{}")
        if status != 200:
            raise OSError(f"repository index: HTTP {status}: {body[:200]!r}")
        return {m["name"] for m in json.loads(body) if m.get("state") == "READY"}

    def load(self, model: str) -> None:
        status, body = self._request("POST", f"/v2/repository/models/{model}/load", b"{}")
        if status != 200:
            raise OSError(f"HTTP {status}: {body[:300].decode('utf-8', 'replace')}")


class TritonSupervisor:
    """Launches one tritonserver per runner, restarts any that dies, stops them all.

    A restarted server keeps its ports, so API workers' clients reconnect on their own; in
    explicit model-control mode the models that were loaded are loaded again.
    """

    def __init__(self, runners: Sequence[Runner], arguments: Mapping[str, Sequence[str]]) -> None:
        self._runners = list(runners)
        self._arguments = arguments
        self._servers: list[SupervisedServer] = []
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._monitor: threading.Thread | None = None

    @property
    def servers(self) -> Sequence[SupervisedServer]:
        return tuple(self._servers)

    def start(self) -> dict[str, dict[str, str]]:
        """Launch every server and wait until all are ready; the addresses per runner name.

        Runs in the calling thread, which must outlive the servers (their parent-death signal
        follows it). On failure everything launched is stopped and TritonStartError raised.
        """
        try:
            for runner in self._runners:
                server = SupervisedServer(runner, self._arguments.get(runner.name, ()))
                self._servers.append(server)
                server.process.start()
            for server in self._servers:
                try:
                    server.process.wait_ready(server.runner.startup_timeout)
                except TritonStartError as exc:
                    raise server.start_error("tritonserver did not start", exc) from None
                server.up_since = time.monotonic()
                logger.info(
                    "runner %r: tritonserver ready (pid %s; gRPC %s, HTTP %s, metrics %s)",
                    server.name, server.process.pid, *server.addresses().values(),
                )  # fmt: skip
        except BaseException:
            self.stop()
            raise
        return {s.name: s.addresses() for s in self._servers}

    def watch(self) -> None:
        """Watch the servers from a thread that lives until stop() (restarts come from it)."""
        self._monitor = threading.Thread(target=self._watch, name="runnerkit-triton-supervisor", daemon=True)
        self._monitor.start()

    def stop(self) -> None:
        """Stop every server (SIGTERM, then SIGKILL of its process group) and the watcher."""
        with self._lock:
            self._stopping.set()
        for server in self._servers:
            try:
                server.runner.stop_sync()  # stops the process and removes the shadow repository
            except Exception:
                logger.exception("runner %r: stopping tritonserver failed", server.name)
        if self._monitor is not None:
            self._monitor.join(timeout=30)

    # -- the watcher ------------------------------------------------------------------------------

    def _watch(self) -> None:
        next_index = 0.0
        while not self._stopping.wait(_POLL_INTERVAL):
            now = time.monotonic()
            for server in self._servers:
                if self._stopping.is_set():
                    return
                try:
                    if server.process.poll() is not None:
                        self._recover(server)
                    elif server.explicit and now >= next_index:
                        self._note_loaded(server)
                except Exception:  # the watcher must survive anything, or nobody restarts Triton
                    logger.exception("runner %r: supervising tritonserver failed", server.name)
            if now >= next_index:
                next_index = now + _INDEX_INTERVAL

    def _note_loaded(self, server: SupervisedServer) -> None:
        """Remember which models are loaded (explicit mode: also those loaded at run time)."""
        try:
            loaded = server.ready_models()
        except (OSError, ValueError) as exc:  # it may be dying: the next round restarts it
            logger.debug("runner %r: model index not read: %s", server.name, exc)
            return
        if loaded != server.loaded:
            server.loaded = loaded
            logger.info("runner %r: models loaded: %s", server.name, ", ".join(sorted(loaded)) or "none")

    def _recover(self, server: SupervisedServer) -> None:
        died = time.monotonic()
        code = server.process.poll()
        # Deaths in a row (each within a minute of the last recovery) back off: 0.5 s, 1 s, 2 s...
        server.restarts = server.restarts + 1 if died - server.up_since < _STABLE_AFTER else 1
        delay = min(_FIRST_BACKOFF * 2 ** (server.restarts - 1), _MAX_BACKOFF)
        logger.error(
            "runner %r: tritonserver (pid %s) exited with code %s; restarting it on the same ports in "
            "%.1f s; requests fail with 503 meanwhile. Its last lines:\n%s",
            server.name, server.process.pid, code, delay, server.relay.recent(10),
        )  # fmt: skip
        arguments = server.restart_arguments()
        if arguments != server.arguments:
            logger.info("runner %r: restarting with the models that were loaded: %s",
                        server.name, ", ".join(sorted(server.loaded)))  # fmt: skip
        while True:
            if self._stopping.wait(delay):
                return
            with self._lock:
                if self._stopping.is_set():
                    return
                server.relay.clear()
                server.process.restart(arguments)
            try:
                server.process.wait_ready(server.runner.startup_timeout, relocate_on_conflict=False)
                break
            except TritonStartError as exc:
                if self._stopping.is_set():
                    return
                # A model that no longer loads must not keep the server down: the next attempts
                # start as first launched, and load the others afterwards.
                arguments = server.arguments
                delay = min(delay * 2, _MAX_BACKOFF)
                logger.error(
                    "runner %r: tritonserver did not come back (%s); next attempt in %.1f s. "
                    "Its last lines:\n%s",
                    server.name, exc.args[0].splitlines()[0], delay, server.relay.recent(10),
                )  # fmt: skip
        self._load_again(server)
        server.up_since = time.monotonic()
        logger.info(
            "runner %r: tritonserver is back (pid %s) %.1f s after it died",
            server.name, server.process.pid, server.up_since - died,
        )  # fmt: skip

    def _load_again(self, server: SupervisedServer) -> None:
        if not server.explicit or not server.loaded:
            return
        try:
            missing = sorted(server.loaded - server.ready_models())
        except (OSError, ValueError) as exc:
            logger.error("runner %r: cannot read the model index to load models again: %s", server.name, exc)
            return
        for model in missing:
            try:
                server.load(model)
                logger.info("runner %r: loaded %r again", server.name, model)
            except OSError as exc:
                logger.error("runner %r: loading %r again failed: %s", server.name, model, exc)
