"""The Kubernetes API client: raw JSON over the `kubernetes` package's configuration and transport.

Guarantees:
- This is the only module that imports `kubernetes`. The package is used for configuration (kubeconfig,
  in-cluster service account, auth and token refresh, TLS, proxy) and for its urllib3 pool; requests and
  responses are plain JSON (`json.loads` of the body; orjson's when it is installed, which decodes 2-4x
  faster), never `kubernetes.client` models. Large bodies are decoded with the cyclic GC paused (see
  `gc_paused`): decoding thousands of objects otherwise triggers repeated collections that double its cost.
- Every failure surfaces as `ApiError`: HTTP errors carry the server's Status (code, reason, message); network
  failures carry status 0 and reason `ConnectionRefused`, `Timeout` or `ConnectionError`.
- 429 is retried after its Retry-After; transient 5xx (500, 502, 503, 504) are retried with jittered
  exponential backoff; both a bounded number of times. Watch requests retry only responses that carry
  Retry-After (as client-go does); everything else is left to the reflector.
- Every request has a connect and a read timeout. Watches ask the server for `timeoutSeconds` and read with a
  client timeout a little longer, so a dead connection cannot block a reader forever.
- One `KubeClient` is safe to share between threads: urllib3's pool is thread-safe and sized for the
  controller's concurrent writers; token refresh is serialised.
- `WatchStream` reads the response line by line at the byte level (chunk boundaries need not align with
  events), decodes complete lines only, and ends cleanly on EOF, a read timeout or a reset connection. A line
  that is not a valid event becomes one synthetic `ERROR` event (Status InternalError) and ends the stream, as
  client-go's stream watcher does; a stream that closes in the middle of an event is logged and ends cleanly.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import gc
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlencode

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from ingressctl.k8s.resource import ResourceType
from ingressctl.logging import get_logger

try:  # optional accelerator; results are identical plain dicts and lists
    import orjson

    _loads: Callable[[bytes | str], Any] = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads

log = get_logger(__name__)

_GC_PAUSE_MIN_BYTES = 64 * 1024
_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while bulk-building objects that are all going to stay alive.

    Process-wide but reference-counted across threads: the collector is re-enabled (if it was enabled) when
    the last concurrent user leaves. Pauses are short (one list page or one relist's dispatch).
    """
    global _gc_pausers, _gc_was_enabled
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pausers += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers -= 1
            if _gc_pausers == 0 and _gc_was_enabled:
                gc.enable()


def loads(data: bytes | str) -> Any:
    """Decode JSON (orjson when available), with the GC paused for large documents."""
    if len(data) < _GC_PAUSE_MIN_BYTES:
        return _loads(data)
    with gc_paused():
        return _loads(data)

USER_AGENT = "ingressctl/0.1.0"
_RETRY_STATUSES = frozenset({500, 502, 503, 504})
_PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}
_SA_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"

PatchType = Literal["merge", "strategic", "json"]


class KubeConfigError(Exception):
    """The kubeconfig or in-cluster configuration could not be loaded."""


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
        reason = status_obj.get("reason") or _default_reason(status)
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


def _default_reason(status: int) -> str:
    return {
        400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
        409: "Conflict", 410: "Gone", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
        503: "ServiceUnavailable", 504: "Timeout",
    }.get(status, "Unknown")


def _network_error(exc: BaseException, what: str) -> ApiError:
    """Classify a urllib3/socket failure as an ApiError with status 0."""
    inner: BaseException = exc
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        inner = exc.reason
    text = str(inner)
    reason = "ConnectionError"
    timeouts = (urllib3.exceptions.ConnectTimeoutError, urllib3.exceptions.ReadTimeoutError, TimeoutError)
    # NewConnectionError subclasses ConnectTimeoutError in urllib3: check for a refusal first.
    if isinstance(inner, ConnectionRefusedError) or "refused" in text.lower() or (
            isinstance(inner, OSError) and inner.errno == errno.ECONNREFUSED):
        reason = "ConnectionRefused"
    elif isinstance(inner, timeouts):
        reason = "Timeout"
    return ApiError(0, reason, f"{what}: {text}")


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # an HTTP-date; the API server always sends seconds
    return max(0.0, seconds)


class WatchStream:
    """Iterator over one watch response's events; a context manager; `close()` may be called from any thread.

    Yields `{"type": ..., "object": {...}}` dicts. Ends (StopIteration) on EOF, read timeout, reset connection
    or `close()`. A malformed line yields one synthetic ERROR event and ends the stream.
    """

    _READ_SIZE = 256 * 1024

    def __init__(self, response: urllib3.BaseHTTPResponse, description: str, *,
                 max_line_bytes: int = 64 * 1024 * 1024) -> None:
        self._resp = response
        self._description = description
        self._max_line = max_line_bytes
        self._buf = bytearray()
        self._scan_from = 0
        self._done = False
        self._closed = False
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __next__(self) -> dict[str, Any]:
        while True:
            nl = self._buf.find(b"\n", self._scan_from)
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[:nl + 1]
                self._scan_from = 0
                if not line.strip():
                    continue
                return self._decode(line)
            self._scan_from = len(self._buf)
            if self._done:
                raise StopIteration
            if len(self._buf) > self._max_line:
                return self._fail(f"watch event larger than {self._max_line} bytes")
            chunk = self._read()
            if chunk:
                self._buf += chunk
                continue
            self._done = True
            self._finish()
            rest = bytes(self._buf).strip()
            self._buf.clear()
            self._scan_from = 0
            if rest:
                # The server may omit the final newline; anything that does not parse is a torn event.
                try:
                    event = _loads(rest)
                except ValueError:
                    log.warning("watch stream closed in the middle of an event; discarding the partial event",
                                watch=self._description, partial_bytes=len(rest))
                    raise StopIteration from None
                if _valid_event(event):
                    return event  # type: ignore[no-any-return]
                return self._fail(f"invalid watch event at end of stream: {rest[:200]!r}")
            raise StopIteration

    def _read(self) -> bytes:
        if self._closed:
            return b""
        try:
            return self._resp.read1(self._READ_SIZE)
        except (urllib3.exceptions.ReadTimeoutError, TimeoutError) as e:
            if not self._closed:
                log.info("watch read timed out; ending the stream", watch=self._description, error=str(e))
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as e:
            # Connection reset, protocol error, or the socket was shut down by close() from another thread.
            if not self._closed:
                log.info("watch connection ended", watch=self._description, error=str(e))
        return b""

    def _decode(self, line: bytes) -> dict[str, Any]:
        try:
            event = _loads(line)
        except ValueError as e:
            return self._fail(f"unable to decode an event from the watch stream: {e}; line: {line[:200]!r}")
        if not _valid_event(event):
            return self._fail(f"invalid watch event (want an object with type and object): {line[:200]!r}")
        return event  # type: ignore[no-any-return]

    def _fail(self, message: str) -> dict[str, Any]:
        self._done = True
        self._buf.clear()
        self._scan_from = 0
        self.close()
        return {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                            "status": "Failure", "reason": "InternalError", "code": 500,
                                            "message": message}}

    def _finish(self) -> None:
        """Normal end of body: give the connection back to the pool."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(Exception):
            self._resp.release_conn()

    def close(self) -> None:
        """Stop reading; safe from another thread (unblocks a blocked read)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._done = True
        for step in (self._resp.shutdown, self._resp.close, self._resp.release_conn):
            try:
                step()
            except Exception:
                continue


def _valid_event(event: Any) -> bool:
    return (isinstance(event, dict) and isinstance(event.get("type"), str)
            and isinstance(event.get("object"), dict))


class KubeClient:
    """Raw-JSON Kubernetes REST client; thread-safe; see the module docstring for retry and timeout rules."""

    def __init__(self, configuration: Any, *, pool_maxsize: int = 32, connect_timeout: float = 10.0,
                 read_timeout: float = 60.0, watch_read_slack: float = 30.0, max_retries: int = 5,
                 retry_backoff: float = 0.2, retry_backoff_max: float = 5.0, max_retry_after: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep, user_agent: str = USER_AGENT) -> None:
        configuration.connection_pool_maxsize = pool_maxsize
        # Retry only what urllib3 can retry safely: connect failures and dropped keep-alive connections on
        # idempotent methods. HTTP statuses are ours to retry.
        configuration.retries = urllib3.Retry(total=1, connect=1, read=1, status=0, other=0, redirect=0,
                                              raise_on_status=False)
        self._config = configuration
        self._pool: urllib3.PoolManager = k8s_client.rest.RESTClientObject(configuration).pool_manager
        self._host = str(configuration.host).rstrip("/")
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._watch_read_slack = watch_read_slack
        self._max_retries = max_retries
        self._retry_backoff = retry_backoff
        self._retry_backoff_max = retry_backoff_max
        self._max_retry_after = max_retry_after
        self._sleep = sleep
        self._user_agent = user_agent
        self._auth_lock = threading.Lock()

    # -- construction ---------------------------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, *, context: str | None = None,
                        **kwargs: Any) -> KubeClient:
        """Load `path`; with no path: in-cluster config if available, else $KUBECONFIG, else ~/.kube/config.

        Keyword arguments go to the constructor (timeouts, retries, pool size).
        """
        cfg = k8s_client.Configuration()
        try:
            if path is None and os.environ.get("KUBERNETES_SERVICE_HOST") and os.path.exists(_SA_TOKEN):
                k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
                source = "in-cluster"
            else:
                source = path or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
                k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                    config_file=source, context=context, client_configuration=cfg, persist_config=False)
        except Exception as e:  # ConfigException, YAML, I/O, missing keys: all mean a bad config
            raise KubeConfigError(f"cannot load Kubernetes client configuration: {e}") from e
        log.debug("kubernetes client configured", source=source, server=cfg.host)
        return cls(cfg, **kwargs)

    @classmethod
    def for_host(cls, host: str, *, token: str | None = None, verify_ssl: bool = True,
                 ca_cert: str | None = None, **kwargs: Any) -> KubeClient:
        """A client for `host` (e.g. "http://127.0.0.1:6443") with an optional bearer token."""
        cfg = k8s_client.Configuration()
        cfg.host = host
        cfg.verify_ssl = verify_ssl
        if ca_cert:
            cfg.ssl_ca_cert = ca_cert
        if token:
            cfg.api_key["BearerToken"] = token
            cfg.api_key_prefix["BearerToken"] = "Bearer"
        return cls(cfg, **kwargs)

    @property
    def host(self) -> str:
        return self._host

    def close(self) -> None:
        self._pool.clear()

    # -- verbs ----------------------------------------------------------------------------------------------

    def list(self, rt: ResourceType, namespace: str | None = None, *, resource_version: str | None = None,
             resource_version_match: str | None = None, limit: int | None = None,
             continue_token: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> dict[str, Any]:
        """One page of a list: the raw List dict (items, metadata.resourceVersion, metadata.continue)."""
        query: builtins.list[tuple[str, str]] = []
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        if resource_version_match:
            query.append(("resourceVersionMatch", resource_version_match))
        if limit:
            query.append(("limit", str(limit)))
        if continue_token:
            query.append(("continue", continue_token))
        _selectors(query, label_selector, field_selector)
        return self._obj("GET", rt.path(namespace), query=query, verb="list")

    def list_all(self, rt: ResourceType, namespace: str | None = None, *, label_selector: str | None = None,
                 field_selector: str | None = None,
                 page_size: int = 500) -> tuple[builtins.list[dict[str, Any]], str]:
        """Every item (most recent state, pages of `page_size`) and the list's resourceVersion.

        A continue token that expires mid-way restarts the list once as a single unpaginated request, so the
        result is always one consistent snapshot.
        """
        page = self.list(rt, namespace, limit=page_size, label_selector=label_selector,
                         field_selector=field_selector)
        items: builtins.list[dict[str, Any]] = builtins.list(page.get("items") or [])
        meta = page.get("metadata") or {}
        rv, token = str(meta.get("resourceVersion") or ""), meta.get("continue")
        while token:
            try:
                page = self.list(rt, namespace, limit=page_size, continue_token=token,
                                 label_selector=label_selector, field_selector=field_selector)
            except ApiError as e:
                if not e.is_gone:
                    raise
                log.info("list continue token expired; listing again without pagination", resource=rt.plural)
                page = self.list(rt, namespace, label_selector=label_selector, field_selector=field_selector)
                meta = page.get("metadata") or {}
                return builtins.list(page.get("items") or []), str(meta.get("resourceVersion") or "")
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
        return items, rv

    def watch(self, rt: ResourceType, namespace: str | None = None, *, resource_version: str,
              timeout_seconds: int, allow_bookmarks: bool = True, label_selector: str | None = None,
              field_selector: str | None = None) -> WatchStream:
        """Open a watch from `resource_version`; the server ends it after `timeout_seconds`."""
        query = [("watch", "true"), ("resourceVersion", resource_version),
                 ("timeoutSeconds", str(int(timeout_seconds)))]
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        _selectors(query, label_selector, field_selector)
        path = rt.path(namespace)
        resp = self._request("GET", path, query=query, verb="watch",
                             read_timeout=timeout_seconds + self._watch_read_slack)
        where = f"{rt.plural} in {namespace}" if namespace else rt.plural
        return WatchStream(resp, f"{where} from rv {resource_version}")

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        return self._obj("GET", rt.path(namespace, name), verb="get")

    def create(self, rt: ResourceType, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        return self._obj("POST", rt.path(namespace), body=body, verb="create")

    def update(self, rt: ResourceType, namespace: str | None, name: str,
               body: dict[str, Any]) -> dict[str, Any]:
        return self._obj("PUT", rt.path(namespace, name), body=body, verb="update")

    def update_status(self, rt: ResourceType, namespace: str | None, name: str,
                      body: dict[str, Any]) -> dict[str, Any]:
        return self._obj("PUT", rt.path(namespace, name, "status"), body=body, verb="update")

    def patch(self, rt: ResourceType, namespace: str | None, name: str, patch: Any, *,
              patch_type: PatchType = "merge", subresource: str | None = None) -> dict[str, Any]:
        try:
            content_type = _PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(f"unknown patch type {patch_type!r}; want merge, strategic or json") from None
        return self._obj("PATCH", rt.path(namespace, name, subresource), body=patch,
                         content_type=content_type, verb="patch")

    def delete(self, rt: ResourceType, namespace: str | None, name: str, *,
               propagation_policy: str | None = None) -> dict[str, Any] | None:
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation_policy} \
            if propagation_policy else None
        result = self._json("DELETE", rt.path(namespace, name), body=body, verb="delete")
        return result if isinstance(result, dict) else None

    # -- transport ------------------------------------------------------------------------------------------

    def _obj(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        result = self._json(method, path, **kwargs)
        if not isinstance(result, dict):
            raise ApiError(500, "InternalError", f"{kwargs.get('verb')} {path}: response is not an object")
        return result

    def _json(self, method: str, path: str, *, query: builtins.list[tuple[str, str]] | None = None,
              body: Any = None, content_type: str = "application/json", verb: str) -> Any:
        resp = self._request(method, path, query=query, body=body, content_type=content_type, verb=verb)
        try:
            data = resp.data
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise _network_error(e, f"{verb} {path}: reading the response") from e
        finally:
            resp.release_conn()
        if not data:
            return None
        try:
            return loads(data)
        except ValueError as e:
            raise ApiError(500, "InternalError", f"{verb} {path}: response is not JSON: {e}") from e

    def _auth_headers(self, headers: dict[str, str]) -> None:
        with self._auth_lock:  # refresh hooks (token files, exec plugins) mutate the configuration
            settings = self._config.auth_settings()
            for setting in settings.values():
                if setting.get("in") == "header" and setting.get("value"):
                    headers[setting["key"]] = setting["value"]
            if "authorization" not in headers and getattr(self._config, "username", None):
                headers["authorization"] = self._config.get_basic_auth_token()

    def _request(self, method: str, path: str, *, query: builtins.list[tuple[str, str]] | None = None,
                 body: Any = None, content_type: str = "application/json", verb: str,
                 read_timeout: float | None = None) -> urllib3.BaseHTTPResponse:
        """Send one request with retries; return the 2xx response unread (preload off) or raise ApiError."""
        url = self._host + path + ("?" + urlencode(query) if query else "")
        headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        self._auth_headers(headers)
        data: bytes | None = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = content_type
        timeout = urllib3.Timeout(connect=self._connect_timeout,
                                  read=read_timeout if read_timeout is not None else self._read_timeout)
        is_watch = verb == "watch"
        attempt = 0
        while True:
            try:
                resp = self._pool.request(method, url, body=data, headers=headers, timeout=timeout,
                                          preload_content=False, redirect=False)
            except (urllib3.exceptions.HTTPError, OSError) as e:
                raise _network_error(e, f"{verb} {path}") from e
            if resp.status < 300:
                return resp
            err = self._error_from(resp, verb, path)
            if attempt < self._max_retries and self._should_retry(err, is_watch):
                delay = self._retry_delay(err, attempt)
                log.info("retrying API request", verb=verb, path=path, status=err.status, reason=err.reason,
                         attempt=attempt + 1, delay_s=round(delay, 3))
                self._sleep(delay)
                attempt += 1
                continue
            raise err

    @staticmethod
    def _error_from(resp: urllib3.BaseHTTPResponse, verb: str, path: str) -> ApiError:
        retry_after = _retry_after(resp.headers.get("Retry-After"))
        try:
            raw = resp.data
        except (urllib3.exceptions.HTTPError, OSError):
            raw = b""
        finally:
            resp.release_conn()
        status_obj: Any = None
        try:
            status_obj = _loads(raw) if raw else None
        except ValueError:
            status_obj = None
        if isinstance(status_obj, dict) and status_obj.get("kind") == "Status":
            err = ApiError.from_status(status_obj, resp.status, retry_after=retry_after)
            err.status = resp.status  # the HTTP code wins over the body's
            return err
        text = raw[:300].decode("utf-8", "replace") if raw else (resp.reason or "")
        return ApiError(resp.status, _default_reason(resp.status), f"{verb} {path}: {text}",
                        retry_after=retry_after)

    def _should_retry(self, err: ApiError, is_watch: bool) -> bool:
        if is_watch:
            return err.retry_after is not None and (err.status == 429 or err.is_server_error)
        return err.status == 429 or err.status in _RETRY_STATUSES

    def _retry_delay(self, err: ApiError, attempt: int) -> float:
        if err.retry_after is not None:
            return min(err.retry_after, self._max_retry_after)
        base = min(self._retry_backoff * (2 ** attempt), self._retry_backoff_max)
        return float(base * (0.5 + random.random() / 2))


def _selectors(query: builtins.list[tuple[str, str]], label_selector: str | None,
               field_selector: str | None) -> None:
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
