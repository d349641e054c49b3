"""One log stream for production serving: every line says where it came from.

`[supervisor]` for the process that launches everything, `[worker <pid>]` for API workers,
`[<runner>/tritonserver]` for the lines tritonserver prints.
"""

from __future__ import annotations

import collections
import logging
import os
import re
from typing import Any

ENV_SUPERVISOR_PID = "RUNNERKIT_SUPERVISOR_PID"
FORMAT = "%(asctime)s %(levelname)-7s [%(source)s] %(name)s: %(message)s"
ACCESS_FORMAT = FORMAT.replace("%(message)s", '%(client_addr)s "%(request_line)s" %(status_code)s')

_GLOG_LEVELS = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR, "F": logging.CRITICAL}
_GLOG_LINE = re.compile(r"^[IWEF]\d{4} ")
# tritonserver prints its whole usage text (400 lines) before the message about a bad option.
_USAGE_START = "Usage: tritonserver"
_USAGE_SECTION = re.compile(r"^[A-Za-z][A-Za-z0-9 /-]*:$")


class SourceFilter(logging.Filter):
    """Adds `record.source` unless the record carries one (tritonserver's lines do)."""

    def __init__(self) -> None:
        super().__init__()
        self._supervisor = os.environ.get(ENV_SUPERVISOR_PID, str(os.getpid()))

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "source"):
            is_supervisor = str(record.process) == self._supervisor
            record.source = "supervisor" if is_supervisor else f"worker {record.process}"
        return True


def log_config(level: int | str = logging.INFO) -> dict[str, Any]:
    """A logging.config.dictConfig for the supervisor and its workers (uvicorn applies it in each)."""
    name = logging.getLevelName(level) if isinstance(level, int) else level
    handler = {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "filters": ["source"]}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"source": {"()": SourceFilter}},
        "formatters": {
            "default": {"format": FORMAT},
            "access": {"()": "uvicorn.logging.AccessFormatter", "fmt": ACCESS_FORMAT, "use_colors": False},
        },
        "handlers": {
            "default": {**handler, "formatter": "default"},
            "access": {**handler, "formatter": "access"},
        },
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"level": "INFO"},
            "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
            "httpx": {"level": "WARNING"},  # one line per /metrics scrape of tritonserver otherwise
        },
        "root": {"handlers": ["default"], "level": name},
    }


class TritonLogRelay:
    """Passes tritonserver's lines to the log stream and keeps the ones that explain a failure.

    Its usage text is left out (it buries the one line that says which option was wrong).
    """

    def __init__(self, runner: str, keep: int = 40) -> None:
        self.source = f"{runner}/tritonserver"
        self._logger = logging.getLogger("tritonserver")
        self._recent: collections.deque[str] = collections.deque(maxlen=keep)
        self._in_usage = False

    def __call__(self, line: str) -> None:
        if line.startswith(_USAGE_START):
            self._in_usage = True
            self._emit(logging.INFO, "(tritonserver printed its usage text; left out)")
            return
        if self._in_usage:
            if not line.strip() or line[0].isspace() or _USAGE_SECTION.match(line):
                return
            self._in_usage = False
        self._recent.append(line)
        level = _GLOG_LEVELS[line[0]] if _GLOG_LINE.match(line) else logging.INFO
        self._emit(level, line)

    def _emit(self, level: int, line: str) -> None:
        self._logger.log(level, "%s", line, extra={"source": self.source})

    def recent(self, lines: int = 25) -> str:
        """The last lines tritonserver printed (without its usage text)."""
        return "\n".join(list(self._recent)[-lines:])

    def clear(self) -> None:
        self._recent.clear()
        self._in_usage = False
