"""structlog set-up: one call, before anything logs; stdlib loggers (kubernetes, urllib3) go the same way.

`--log-format json` gives one JSON object per line; `text` gives key=value console lines (coloured on a TTY);
`json-unix`, `json-unix-ms`, `text-unix` and `text-unix-ms` (NIC 5.4) stamp lines with the Unix time in
seconds or milliseconds instead of an ISO date;
`glog` gives the line format of NIC's default logger (`I1125 16:24:39.123456   4242 logger] event key=value`,
UTC, the year after the level letter with `--include-year`).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

import structlog

from ingressctl.settings import LogSettings

_LEVELS = {
    "trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO,
    "warning": logging.WARNING, "error": logging.ERROR, "fatal": logging.CRITICAL,
}


def unix_timestamper(milliseconds: bool) -> Any:
    """A processor that sets `timestamp` to the Unix time in whole seconds or milliseconds (NIC's
    `-log-format` values ending in `-unix` / `-unix-ms`)."""

    def stamp(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
        now = time.time()
        event["timestamp"] = int(now * 1000) if milliseconds else int(now)
        return event

    return stamp


def configure_logging(settings: LogSettings, stream: Any = None) -> None:
    """Route structlog and stdlib logging through one handler on `stream` (stderr by default)."""
    out = stream if stream is not None else sys.stderr
    base, _, unix = settings.format.partition("-")
    stamper = (unix_timestamper(unix == "unix-ms") if unix
               else structlog.processors.TimeStamper(fmt="iso", utc=True))
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        stamper,
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Any
    if base == "json":
        shared.append(structlog.processors.dict_tracebacks)
        renderer = structlog.processors.JSONRenderer()
    elif settings.format == "glog":
        shared.append(structlog.processors.format_exc_info)
        renderer = GlogRenderer(include_year=settings.include_year)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=bool(getattr(out, "isatty", lambda: False)()))

    structlog.configure(
        # A disabled level is dropped before any processor runs (the sync thread logs per object at debug).
        processors=[structlog.stdlib.filter_by_level, *shared,
                    structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    ))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(_LEVELS[settings.level])
    # The kubernetes client and urllib3 are chatty at debug; keep them at warning unless tracing.
    if settings.level != "trace":
        for name in ("urllib3", "kubernetes"):
            logging.getLogger(name).setLevel(max(logging.WARNING, _LEVELS[settings.level]))


class GlogRenderer:
    """One glog-style line per event: `<L><[YYYY]MMDD> <HH:MM:SS.micro> <pid> <logger>] <event> k=v ...`."""

    _LETTERS = {"debug": "I", "info": "I", "warning": "W", "error": "E", "critical": "F", "exception": "E"}

    def __init__(self, *, include_year: bool = False) -> None:
        self._date = "%Y%m%d" if include_year else "%m%d"

    def __call__(self, logger: Any, method: str, event: dict[str, Any]) -> str:
        event.pop("timestamp", None)
        letter = self._LETTERS.get(str(event.pop("level", "info")), "I")
        now = datetime.now(UTC)
        head = f"{letter}{now.strftime(self._date)} {now.strftime('%H:%M:%S.%f')} {os.getpid():>7} " \
               f"{event.pop('logger', '')}] {event.pop('event', '')}"
        tail = event.pop("exception", None)
        fields = " ".join(f"{k}={v!r}" if isinstance(v, str) and (" " in v or not v) else f"{k}={v}"
                          for k, v in event.items())
        line = f"{head} {fields}" if fields else head
        return f"{line}\n{tail}" if tail else line


def get_logger(name: str) -> Any:
    return structlog.stdlib.get_logger(name)
