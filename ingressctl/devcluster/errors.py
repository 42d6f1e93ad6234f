"""Kubernetes `Status` errors as the API server sends them.

Every failure the devcluster reports is a `StatusError`: an HTTP code plus the `Status` body a real
kube-apiserver would send (`kind: Status`, `status: Failure`, `reason`, `message`, `details`, `code`), and
optional response headers (`Retry-After` for 429). Constructors mirror apimachinery's `errors.New*` helpers so
that messages read the same as a real cluster's.
"""

from __future__ import annotations

import json
from typing import Any


class StatusError(Exception):
    """An API error that renders as a Kubernetes `Status` object."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.metadata: dict[str, Any] = {}

    def status(self) -> dict[str, Any]:
        """The `Status` object for this error."""
        body: dict[str, Any] = {
            "kind": "Status", "apiVersion": "v1", "metadata": dict(self.metadata), "status": "Failure",
            "message": self.message,
        }
        if self.reason:        # a plain error (kube-apiserver's StatusReasonUnknown) has no reason
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body

    def body(self) -> bytes:
        return json.dumps(self.status(), separators=(",", ":")).encode()


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def _details(name: str, group: str, plural: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if plural:
        details["kind"] = plural
    details.update(extra)
    return details


def not_found(plural: str, group: str, name: str) -> StatusError:
    return StatusError(404, "NotFound", f'{_qualified(plural, group)} "{name}" not found',
                       _details(name, group, plural))


def resource_not_found() -> StatusError:
    return StatusError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(plural: str, group: str, name: str) -> StatusError:
    return StatusError(409, "AlreadyExists", f'{_qualified(plural, group)} "{name}" already exists',
                       _details(name, group, plural))


def conflict(plural: str, group: str, name: str, why: str) -> StatusError:
    return StatusError(409, "Conflict", f'Operation cannot be fulfilled on {_qualified(plural, group)} '
                       f'"{name}": {why}', _details(name, group, plural))


def stale_resource_version(plural: str, group: str, name: str) -> StatusError:
    return conflict(plural, group, name, "the object has been modified; please apply your changes to the "
                    "latest version and try again")


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message, {})


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> StatusError:
    """422 Invalid; causes are (field, cause reason, message) like a field.ErrorList."""
    summary = ", ".join(f"{field}: {msg}" for field, _, msg in causes)
    what = f"{kind}.{group}" if group else kind
    message = f'{what} "{name}" is invalid: {summary}' if len(causes) == 1 else \
        f'{what} "{name}" is invalid: [{summary}]'
    return StatusError(422, "Invalid", message, _details(
        name, group, kind, causes=[{"reason": reason, "message": msg, "field": field}
                                   for field, reason, msg in causes]))


def unprocessable(message: str) -> StatusError:
    return StatusError(422, "Invalid", message, {})


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message, {})


def too_old_resource_version(requested: int, current: int) -> StatusError:
    return expired(f"too old resource version: {requested} ({current})")


def too_large_resource_version(requested: int, current: int) -> StatusError:
    return StatusError(504, "Timeout", f"Too large resource version: {requested}, current: {current}",
                       {"causes": [{"reason": "ResourceVersionTooLarge",
                                    "message": "Too large resource version"}],
                        "retryAfterSeconds": 1}, {"Retry-After": "1"})


def entity_too_large(limit: int) -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}", {})


def method_not_allowed(method: str) -> StatusError:
    return StatusError(405, "MethodNotAllowed", f"the server does not allow this method on the requested "
                       f"resource ({method})", {})


def unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(415, "UnsupportedMediaType",
                       f'the body of the request was in an unknown format - accepted media types include: '
                       f'application/json, application/yaml (got "{content_type}")', {})


def not_acceptable(accept: str) -> StatusError:
    return StatusError(406, "NotAcceptable", f"only the following media types are accepted: application/json "
                       f"(got {accept})", {})


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", "Unauthorized", {})


def forbidden(message: str) -> StatusError:
    return StatusError(403, "Forbidden", message, {})


def too_many_requests(retry_after: int) -> StatusError:
    return StatusError(429, "TooManyRequests", "Too many requests, please try again later.",
                       {"retryAfterSeconds": retry_after}, {"Retry-After": str(retry_after)})


def internal_error(message: str) -> StatusError:
    return StatusError(500, "InternalError", f"Internal error occurred: {message}",
                       {"causes": [{"message": message}]})


def server_fault(code: int, retry_after: int) -> StatusError:
    """An injected fault: 429 with Retry-After, 500, or another code with its Kubernetes reason."""
    if code == 429:
        return too_many_requests(retry_after)
    if code == 500:
        return internal_error("injected fault")
    # The reasons a real API server gives with these codes, so clients classify injected faults as real ones.
    reasons = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
               410: "Expired", 413: "RequestEntityTooLarge", 422: "Invalid", 502: "InternalError",
               503: "ServiceUnavailable", 504: "Timeout"}
    err = StatusError(code, reasons.get(code, "InternalError"), f"injected fault (HTTP {code})",
                      {"retryAfterSeconds": retry_after} if code in (503, 504) else {})
    if code in (503, 504):
        err.headers["Retry-After"] = str(retry_after)
    return err
