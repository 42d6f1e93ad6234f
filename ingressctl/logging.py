"""structlog set-up: one call, before anything logs; stdlib loggers (kubernetes, urllib3) go the same way.

`--log-format json` gives one JSON object per line; `text` gives key=value console lines (coloured on a TTY).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

from ingressctl.settings import LogSettings

_LEVELS = {
    "trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO,
    "warning": logging.WARNING, "error": logging.ERROR, "fatal": logging.CRITICAL,
}


def configure_logging(settings: LogSettings, stream: Any = None) -> None:
    """Route structlog and stdlib logging through one handler on `stream` (stderr by default)."""
    out = stream if stream is not None else sys.stderr
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Any
    if settings.format == "json":
        shared.append(structlog.processors.dict_tracebacks)
        renderer = structlog.processors.JSONRenderer()
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


def get_logger(name: str) -> Any:
    return structlog.stdlib.get_logger(name)
