"""Composition root: builds the controller's parts from `Settings`, starts them in order, stops them in reverse."""

from __future__ import annotations

from ingressctl.logging import get_logger
from ingressctl.settings import Settings

log = get_logger(__name__)


def run(settings: Settings) -> int:
    """Run the controller; returns the process exit status."""
    log.error("the controller is not built yet: this release ships the development API server only "
              "(python -m ingressctl.devcluster)", ingress_class=settings.controller.ingress_class)
    return 1
