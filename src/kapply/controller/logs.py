"""The controller's logs: plain text lines, or (`--log-format=json`) one JSON object per line for a log pipeline.

A JSON line has `time` (UTC, RFC 3339 with milliseconds), `level`, `logger`, `message`, and, for anything logged
while an object is reconciled (by the controller or by any kapply code it calls: a retried request, a deploy's
warning), that object's `kind`, `namespace` and `name` and when its reconcile started (`reconcileStarted`: the lines
of one reconcile share it, and with the last one's `time` it spans the reconcile), set by the worker through a
context variable rather than passed down every call; `error` holds a traceback; fields given with `extra=` are kept.
"""

from __future__ import annotations

import contextvars
import enum
import logging
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


@dataclass(frozen=True, slots=True)
class Reconciling:
    """The object being reconciled in a context, and when its reconcile started (a Unix time)."""

    kind: str
    namespace: str
    name: str
    started: float


RECONCILING: contextvars.ContextVar[Reconciling | None] = contextvars.ContextVar("reconciling", default=None)


class LogFormat(enum.StrEnum):
    TEXT = "text"
    JSON = "json"


def _time(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _time(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        reconciling = RECONCILING.get()
        if reconciling is not None:
            line["kind"], line["namespace"], line["name"] = reconciling.kind, reconciling.namespace, reconciling.name
            line["reconcileStarted"] = _time(reconciling.started)
        line.update((k, v) for k, v in vars(record).items() if k not in _STANDARD and k not in line)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def configure(level: int, log_format: LogFormat) -> None:
    """Log to stderr in `log_format` from `level` up (the process's root logger, replacing the handlers that the
    CLI's `--debug` set up)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format is LogFormat.JSON else logging.Formatter(TEXT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
