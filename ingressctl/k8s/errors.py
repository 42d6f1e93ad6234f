"""API errors, after apimachinery's `pkg/api/errors`: one exception type for every failed call.

Guarantees:
- `ApiError` carries the HTTP status, the Status reason and message (and the Status body when the server
  sent one); a network failure has status 0. The `is_*` predicates classify it as client-go's `IsNotFound`,
  `IsConflict`, `IsGone` (410 Expired/Gone), ... do: by reason, and by status code when the reason is not
  one the API server defines.
- A Retry-After (header or `details.retryAfterSeconds`) is kept in `retry_after`, in seconds.
"""

from __future__ import annotations

import builtins
from typing import Any


class ApiError(Exception):
    """An API call failed: an HTTP error with the server's Status, or a network failure (status 0)."""

    def __init__(self, status: int, reason: str, message: str, body: dict[str, Any] | None = None, *,
                 retry_after: float | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else f"{reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.retry_after = retry_after

    @classmethod
    def from_status(cls, status_obj: Any, http_status: int = 0, *,
                    retry_after: float | None = None) -> ApiError:
        """Build from a Status object (an error body or a watch ERROR event's object)."""
        if not isinstance(status_obj, dict):
            return cls(http_status or 500, "InternalError", f"unexpected error object: {status_obj!r:.200}")
        code = status_obj.get("code")
        status = code if isinstance(code, int) and code else http_status or 500
        reason = status_obj.get("reason") or default_reason(status)
        message = status_obj.get("message") or ""
        if retry_after is None:
            details = status_obj.get("details")
            if isinstance(details, dict) and isinstance(details.get("retryAfterSeconds"), int | float):
                retry_after = float(details["retryAfterSeconds"])
        return cls(status, str(reason), str(message), status_obj, retry_after=retry_after)

    @property
    def is_not_found(self) -> bool:
        return self.reason == "NotFound" or (self.status == 404 and self.reason not in _KNOWN_REASONS)

    @property
    def is_conflict(self) -> bool:
        return self.reason == "Conflict" or (self.status == 409 and self.reason not in _KNOWN_REASONS)

    @property
    def is_already_exists(self) -> bool:
        return self.reason == "AlreadyExists"

    @property
    def is_gone(self) -> bool:
        """410, reason Expired (servers >= 1.18) or Gone: the resourceVersion or continue token is too old."""
        return self.status == 410 or self.reason in ("Expired", "Gone")

    @property
    def is_too_many_requests(self) -> bool:
        return self.status == 429 or self.reason == "TooManyRequests"

    @property
    def is_connection_refused(self) -> bool:
        return self.status == 0 and self.reason == "ConnectionRefused"

    @property
    def is_network_error(self) -> bool:
        return self.status == 0

    @property
    def is_server_error(self) -> bool:
        return 500 <= self.status <= 599

    @property
    def is_too_large_resource_version(self) -> bool:
        """The requested resourceVersion is newer than the server has seen (cause ResourceVersionTooLarge)."""
        details = self.body.get("details") if isinstance(self.body, dict) else None
        causes = details.get("causes") if isinstance(details, dict) else None
        if isinstance(causes, builtins.list):
            for cause in causes:
                if isinstance(cause, dict) and cause.get("reason") == "ResourceVersionTooLarge":
                    return True
        return self.status == 504 and "Too large resource version" in self.message


_KNOWN_REASONS = frozenset({
    "NotFound", "Conflict", "AlreadyExists", "Expired", "Gone", "Invalid", "TooManyRequests", "Forbidden",
    "Unauthorized", "BadRequest", "MethodNotAllowed", "InternalError", "ServiceUnavailable", "Timeout",
})


def default_reason(status: int) -> str:
    return {
        400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
        409: "Conflict", 410: "Gone", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
        503: "ServiceUnavailable", 504: "Timeout",
    }.get(status, "Unknown")

