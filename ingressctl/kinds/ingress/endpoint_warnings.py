"""Warnings for Ingresses that route to a Service without endpoints (requests to it get 502).

An existing Service whose backend port resolves to no endpoints is not an error for the config (its upstream
points at the 502 server), but a user reading only the Ingress would not know why every request fails.
`no_endpoints_reason` says why a Service has none (no EndpointSlices at all, or none of their endpoints
ready), and `EndpointWarnings` decides when to tell: once per Ingress and Service, again only after the
reason changed or the Service had endpoints in between. Used from the sync thread only (no locking).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

REASON_NO_ENDPOINTS = "NoEndpoints"
"""The Warning event's reason on the Ingress."""


def no_endpoints_reason(namespace: str, service: str, port: int | str,
                        slices: Iterable[Mapping[str, Any]]) -> str:
    """The message for a Service whose backend `port` resolved to no endpoints, given its EndpointSlices."""
    slices = list(slices)
    if not slices:
        what = "has no EndpointSlices"
    else:
        others = sum(len((ep or {}).get("addresses") or []) for slc in slices
                     for ep in slc.get("endpoints") or [] if isinstance(ep, dict))
        what = f"has no ready endpoints for port {port}" + (
            f" ({others} endpoint address(es) not ready or for another port)" if others else "")
    return f"Service {namespace}/{service} {what}: requests routed to it get 502 until it has ready endpoints"


class EndpointWarnings:
    """Which no-endpoints warnings each Ingress has had, so that each is given once until it changes."""

    def __init__(self) -> None:
        self._reported: dict[str, dict[str, str]] = {}   # Ingress key -> Service -> message

    def observe(self, ingress_key: str, problems: Mapping[str, str]) -> list[str]:
        """The Ingress now has these problems (Service -> message); returns the messages not yet given."""
        if not problems:   # the common case: nothing to tell, at most an old record to drop
            self._reported.pop(ingress_key, None)
            return []
        before = self._reported.get(ingress_key, {})
        new = [msg for svc, msg in sorted(problems.items()) if before.get(svc) != msg]
        self._reported[ingress_key] = dict(problems)
        return new

    def forget(self, ingress_key: str) -> None:
        """The Ingress is gone: a new one of the same name is warned afresh."""
        self._reported.pop(ingress_key, None)
