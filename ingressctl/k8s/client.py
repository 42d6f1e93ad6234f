"""The Kubernetes API client: raw JSON over the `kubernetes` package's configuration and transport.

Guarantees:
- This is the only module that imports `kubernetes`. The package is used for configuration (kubeconfig,
  in-cluster service account, auth and token refresh, TLS, proxy) and for its urllib3 pool; requests and
  responses are plain JSON (decoded with orjson, 2-4x faster than `json.loads`, into the same dicts and
  lists), never `kubernetes.client` models. Large bodies are decoded with the cyclic GC paused (see
  `pause_gc`): decoding thousands of objects otherwise triggers repeated collections that double its cost.
- Every failure surfaces as `ApiError`: HTTP errors carry the server's Status (code, reason, message); network
  failures carry status 0 and reason `ConnectionRefused`, `Timeout` or `ConnectionError`. Every 403 is also
  logged as the RBAC permission it lacks and counted in `permission_denials` (permissions.py).
- 429 is retried after its Retry-After; transient 5xx (500, 502, 503, 504) are retried with jittered
  exponential backoff; both a bounded number of times. Watch requests retry only responses that carry
  Retry-After (as client-go does); everything else is left to the reflector.
- `list_pages` yields a list's pages in order; with `max_limit`, each continue page asks for twice the
  previous page's limit, up to `max_limit` (`page_limits`), so a long list costs O(log) round trips after
  its first page instead of one per `limit` items. With prefetch (the default), it requests page k+1 in a
  helper thread while the caller decodes and ingests page k; the continue token is read from the head of
  the body when the server uses its usual layout, and a page is decoded only once. The helper runs at most
  two pages ahead and ends with the list, with the first error (raised to the caller where that page
  would have been) or when the iterator is closed.
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
import queue
import random
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlencode

import orjson
import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from ingressctl.k8s.permissions import PermissionDenials
from ingressctl.k8s.resource import ResourceType
from ingressctl.logging import get_logger

_loads: Callable[[bytes | str], Any] = orjson.loads  # plain dicts and lists, as json.loads gives, faster

log = get_logger(__name__)

_GC_PAUSE_MIN_BYTES = 64 * 1024
_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_was_enabled = False


def pause_gc() -> Callable[[], None]:
    """Pause the cyclic garbage collector; return the (idempotent) function that ends this pause.

    Process-wide but reference-counted across threads: the collector is re-enabled (if it was enabled) when
    the last pause ends. Used while bulk-building objects that all stay alive (a list and its delivery to
    the cache): a collection in the middle would only walk them, and walking a growing heap again and again
    costs as much as decoding it. Nothing is lost: cyclic garbage made meanwhile is collected afterwards.
    """
    global _gc_pausers, _gc_was_enabled
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pausers += 1
    released = False

    def release() -> None:
        global _gc_pausers
        nonlocal released
        with _gc_lock:
            if released:
                return
            released = True
            _gc_pausers -= 1
            if _gc_pausers == 0 and _gc_was_enabled:
                gc.enable()

    return release


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """`pause_gc()` for the duration of a `with` block."""
    release = pause_gc()
    try:
        yield
    finally:
        release()


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
        self.permission_denials = PermissionDenials()   # every 403, as the RBAC permission it lacks

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
        return self._decode_page(self._list_body(
            rt, namespace, resource_version=resource_version, resource_version_match=resource_version_match,
            limit=limit, continue_token=continue_token, label_selector=label_selector,
            field_selector=field_selector), rt)

    def list_pages(self, rt: ResourceType, namespace: str | None = None, *,
                   resource_version: str | None = None, resource_version_match: str | None = None,
                   limit: int | None = None, max_limit: int | None = None, label_selector: str | None = None,
                   field_selector: str | None = None,
                   prefetch: bool = True) -> Generator[dict[str, Any], None, None]:
        """Every page of one list, in order, as `list()` returns them; close the iterator to stop early.

        The first page is requested with `resource_version` (and `limit`), the following ones with the
        previous page's continue token and the next limit of `page_limits(limit, max_limit)`. An error is
        raised where the failing page would have been yielded, so a caller can tell a first-page failure
        from an expired continue token. With `prefetch`, a helper thread requests page k+1 while the caller
        decodes and processes page k: it reads the continue token from the head of the body, where the API
        server writes the list's metadata, without decoding the page (and decodes it first when the body is
        laid out otherwise).
        """
        def first() -> bytes:
            return self._list_body(rt, namespace, resource_version=resource_version,
                                   resource_version_match=resource_version_match, limit=limit,
                                   label_selector=label_selector, field_selector=field_selector)

        limits = page_limits(limit, max_limit)

        def fetch(token: str) -> bytes:  # called for one page at a time, in order
            return self._list_body(rt, namespace, limit=next(limits), continue_token=token,
                                   label_selector=label_selector, field_selector=field_selector)

        def decode(body: bytes) -> dict[str, Any]:
            return self._decode_page(body, rt)

        return paged_list(first, fetch, decode, prefetch=prefetch, name=rt.plural)

    def list_all(self, rt: ResourceType, namespace: str | None = None, *, label_selector: str | None = None,
                 field_selector: str | None = None,
                 page_size: int = 500) -> tuple[builtins.list[dict[str, Any]], str]:
        """Every item (most recent state, pages of `page_size`) and the list's resourceVersion.

        A continue token that expires mid-way restarts the list once as a single unpaginated request, so the
        result is always one consistent snapshot.
        """
        pages = self.list_pages(rt, namespace, limit=page_size, label_selector=label_selector,
                                field_selector=field_selector)
        try:
            page = next(pages)
            items: builtins.list[dict[str, Any]] = builtins.list(page.get("items") or [])
            meta = page.get("metadata") or {}
            rv = str(meta.get("resourceVersion") or "")
            while True:
                try:
                    page = next(pages)
                except StopIteration:
                    break
                except ApiError as e:
                    if not e.is_gone:
                        raise
                    log.info("list continue token expired; listing again without pagination",
                             resource=rt.plural)
                    page = self.list(rt, namespace, label_selector=label_selector,
                                     field_selector=field_selector)
                    meta = page.get("metadata") or {}
                    return builtins.list(page.get("items") or []), str(meta.get("resourceVersion") or "")
                items.extend(page.get("items") or [])
        finally:
            pages.close()
        return items, rv

    def _list_body(self, rt: ResourceType, namespace: str | None, *, resource_version: str | None = None,
                   resource_version_match: str | None = None, limit: int | None = None,
                   continue_token: str | None = None, label_selector: str | None = None,
                   field_selector: str | None = None) -> bytes:
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
        return self._body("GET", rt.path(namespace), query=query, verb="list")

    @staticmethod
    def _decode_page(body: bytes, rt: ResourceType) -> dict[str, Any]:
        try:
            page = loads(body) if body else None
        except ValueError as e:
            raise ApiError(500, "InternalError", f"list {rt.plural}: response is not JSON: {e}") from e
        if not isinstance(page, dict):
            raise ApiError(500, "InternalError", f"list {rt.plural}: response is not an object")
        return page

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
        data = self._body(method, path, query=query, body=body, content_type=content_type, verb=verb)
        if not data:
            return None
        try:
            return loads(data)
        except ValueError as e:
            raise ApiError(500, "InternalError", f"{verb} {path}: response is not JSON: {e}") from e

    def _body(self, method: str, path: str, *, query: builtins.list[tuple[str, str]] | None = None,
              body: Any = None, content_type: str = "application/json", verb: str) -> bytes:
        """The whole body of a 2xx response (the connection goes back to the pool)."""
        resp = self._request(method, path, query=query, body=body, content_type=content_type, verb=verb)
        try:
            return bytes(resp.data)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise _network_error(e, f"{verb} {path}: reading the response") from e
        finally:
            resp.release_conn()

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
            if err.status == 403:
                self.permission_denials.record(verb, path, err.message)
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


# The API server encodes a list as TypeMeta, ListMeta, then items: {"kind":"XList","apiVersion":"v",
# "metadata":{"resourceVersion":"1","continue":"..."},"items":[...]}. ListMeta holds scalars only.
_LIST_HEAD = re.compile(rb'\{\s*"kind"\s*:\s*"[^"\\]*"\s*,\s*"apiVersion"\s*:\s*"[^"\\]*"\s*,'
                        rb'\s*"metadata"\s*:\s*(\{[^{}]*\})')
_LIST_HEAD_MAX = 64 * 1024


def page_limits(limit: int | None, max_limit: int | None = None) -> Iterator[int | None]:
    """The limits of a list's continue pages after a first page of `limit`: `limit` again without
    `max_limit`, else doubling from 2 x `limit` up to `max_limit` (e.g. 500: 1000, 2000, 4000, 4000, ...).
    None (no limit) stays None."""
    current = limit
    while True:
        if current is not None and max_limit is not None and current < max_limit:
            current = min(current * 2, max_limit)
        yield current


def peek_list_continue(body: bytes) -> str | None:
    """The continue token of an encoded List ("" on the last page) read from its head; None if unsure.

    Only a body that starts with kind, apiVersion and a brace-free metadata object (the API server's
    layout) is read; anything else gives None and the caller decodes the page to find the token.
    """
    m = _LIST_HEAD.match(body, 0, _LIST_HEAD_MAX)
    if m is None:
        return None
    try:
        meta = _loads(m.group(1))
    except ValueError:
        return None
    token = meta.get("continue") if isinstance(meta, dict) else None
    if token is None:
        return ""
    return token if isinstance(token, str) else None


def paged_list(first: Callable[[], bytes], fetch: Callable[[str], bytes],
               decode: Callable[[bytes], dict[str, Any]], *, prefetch: bool = True,
               name: str = "list") -> Generator[dict[str, Any], None, None]:
    """The pages of one list (see `KubeClient.list_pages`), from raw-body functions.

    `first()` requests the first page's body, `fetch(token)` a continue page's, `decode(body)` turns a
    body into a page dict (raising ApiError if it is not one).
    """
    if not prefetch:
        page = decode(first())
        while True:
            token = _continue_of(page)
            yield page
            if not token:
                return
            page = decode(fetch(token))
    body = first()
    peeked = peek_list_continue(body)
    prefetcher: _PagePrefetcher | None = None
    try:
        if peeked:
            prefetcher = _PagePrefetcher(fetch, peeked, decode, name)
        page = decode(body)
        del body
        token = _continue_of(page)
        _check_peeked(peeked, token, name)
        if token and prefetcher is None:
            prefetcher = _PagePrefetcher(fetch, token, decode, name)
        yield page
        while token and prefetcher is not None:
            item, peeked = prefetcher.next()
            page = item if isinstance(item, dict) else decode(item)
            del item
            token = _continue_of(page)
            _check_peeked(peeked, token, name)
            yield page
    finally:
        if prefetcher is not None:
            prefetcher.close()


def _continue_of(page: dict[str, Any]) -> str:
    meta = page.get("metadata")
    token = meta.get("continue") if isinstance(meta, dict) else None
    return token if isinstance(token, str) else ""


def _check_peeked(peeked: str | None, token: str, name: str) -> None:
    """A page requested ahead with a peeked token must be the one the decoded page asks for."""
    if peeked is not None and peeked != token:
        raise ApiError(500, "InternalError", f"list {name}: the continue token in the list's head "
                                             f"differs from the decoded one")


class _PagePrefetcher:
    """Requests continue pages in a helper thread, one page ahead of the consumer.

    Hands over, in order through a one-slot queue, (body, peeked token) pairs: the raw body when its
    continue token could be read from its head, else the page decoded here (to learn the token), with
    None. An exception raised by a request is handed over in its place and ends the helper, as do the last
    page and `close()` (after which the request in flight, if any, finishes and its result is dropped).
    """

    _PUT_POLL = 0.1

    def __init__(self, fetch: Callable[[str], bytes], token: str,
                 decode: Callable[[bytes], dict[str, Any]], name: str) -> None:
        self._fetch = fetch
        self._decode = decode
        self._slot: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(token,), name=f"list-{name}", daemon=True)
        self._thread.start()

    def _run(self, token: str) -> None:
        while token and not self._closed.is_set():
            try:
                body = self._fetch(token)
                peeked = peek_list_continue(body)
                if peeked is None:
                    page = self._decode(body)
                    item: tuple[dict[str, Any] | bytes, str | None] = (page, None)
                    token = _continue_of(page)
                else:
                    item = (body, peeked)
                    token = peeked
            except BaseException as e:  # handed to the consumer, which raises it in its own thread
                self._put((False, e))
                return
            if not self._put((True, item)):
                return

    def _put(self, item: tuple[bool, Any]) -> bool:
        while not self._closed.is_set():
            try:
                self._slot.put(item, timeout=self._PUT_POLL)
                return True
            except queue.Full:
                continue
        return False

    def next(self) -> tuple[dict[str, Any] | bytes, str | None]:
        """The next (body or page, peeked token); raises what requesting it raised."""
        ok, value = self._slot.get()
        if not ok:
            self._closed.set()
            raise value
        return value  # type: ignore[no-any-return]

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(queue.Empty):
            self._slot.get_nowait()  # a helper blocked in put() sees the close at its next poll


def _selectors(query: builtins.list[tuple[str, str]], label_selector: str | None,
               field_selector: str | None) -> None:
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
