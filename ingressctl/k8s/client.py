"""The Kubernetes API client: raw JSON over the `kubernetes` package's configuration and transport.

Guarantees:
- This is the only module that imports `kubernetes`. The package is used for configuration (kubeconfig,
  in-cluster service account, auth and token refresh, TLS, proxy) and for its urllib3 pool; requests and
  responses are plain JSON (decoded by codec.py with orjson, the GC paused for large bodies), never
  `kubernetes.client` models.
- Every failure surfaces as `ApiError` (errors.py): HTTP errors carry the server's Status (code, reason,
  message); network failures carry status 0 and reason `ConnectionRefused`, `Timeout` or `ConnectionError`.
  Every 403 is also logged as the RBAC permission it lacks and counted in `permission_denials`
  (permissions.py).
- 429 is retried after its Retry-After; transient 5xx (500, 502, 503, 504) are retried with jittered
  exponential backoff; both a bounded number of times. Watch requests retry only responses that carry
  Retry-After (as client-go does); everything else is left to the reflector.
- `list_pages` yields a list's pages in order through pager.py: with `max_limit`, each continue page asks
  for twice the previous page's limit, up to `max_limit`, and with prefetch (the default) page k+1 is
  requested while the caller decodes and ingests page k.
- Every request has a connect and a read timeout. Watches ask the server for `timeoutSeconds` and read with a
  client timeout a little longer, so a dead connection cannot block a reader forever; the response is read
  as a `WatchStream` (watch.py).
- One `KubeClient` is safe to share between threads: urllib3's pool is thread-safe and sized for the
  controller's concurrent writers; token refresh is serialised.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import random
import threading
import time
from collections.abc import Callable, Generator
from typing import Any, Literal
from urllib.parse import urlencode

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from ingressctl.k8s.codec import loads, raw_loads
from ingressctl.k8s.errors import ApiError, default_reason
from ingressctl.k8s.pager import page_limits, paged_list
from ingressctl.k8s.permissions import PermissionDenials
from ingressctl.k8s.resource import ResourceType
from ingressctl.k8s.watch import WatchStream
from ingressctl.logging import get_logger

log = get_logger(__name__)


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
                 field_selector: str | None = None, page_size: int = 500,
                 max_page_size: int | None = None) -> tuple[builtins.list[dict[str, Any]], str]:
        """Every item (most recent state, pages of `page_size`, growing up to `max_page_size` as in
        `list_pages`) and the list's resourceVersion.

        A continue token that expires mid-way restarts the list once as a single unpaginated request, so the
        result is always one consistent snapshot.
        """
        pages = self.list_pages(rt, namespace, limit=page_size, max_limit=max_page_size,
                                label_selector=label_selector, field_selector=field_selector)
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
            status_obj = raw_loads(raw) if raw else None
        except ValueError:
            status_obj = None
        if isinstance(status_obj, dict) and status_obj.get("kind") == "Status":
            err = ApiError.from_status(status_obj, resp.status, retry_after=retry_after)
            err.status = resp.status  # the HTTP code wins over the body's
            return err
        text = raw[:300].decode("utf-8", "replace") if raw else (resp.reason or "")
        return ApiError(resp.status, default_reason(resp.status), f"{verb} {path}: {text}",
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
