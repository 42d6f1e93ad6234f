"""KubeClient against a tiny scripted HTTP server on 127.0.0.1: raw JSON, retries, errors, watch framing.

`FakeApiServer` here is also used by the reflector fault tests.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import structlog

from ingressctl.http_serving import POLL_INTERVAL
from ingressctl.k8s.client import KubeClient, KubeConfigError
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.pager import peek_list_continue
from ingressctl.k8s.resource import CONFIGMAPS, INGRESSCLASSES, INGRESSES, NAMESPACES
from ingressctl.k8s.watch import WatchStream

# -- the fake server ----------------------------------------------------------------------------------------


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") == "true"


@dataclass
class Reply:
    status: int = 200
    body: bytes | list[bytes] = b""  # a list is written piece by piece, flushed each time
    headers: dict[str, str] = field(default_factory=dict)
    chunked: bool = False
    hold: bool = False   # keep the response open after the body until released or the server stops
    abort: bool = False  # drop the connection after the body without finishing the response


class FakeApiServer:
    """HTTP/1.1 server on an ephemeral 127.0.0.1 port; `handler(request) -> Reply` decides every response."""

    def __init__(self, handler: Callable[[Request], Reply]) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self.release = threading.Event()
        self._lock = threading.Lock()
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                req = Request(self.command, parts.path, dict(parse_qsl(parts.query)),
                              {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length))
                with outer._lock:
                    outer.requests.append(req)
                reply = outer.handler(req)
                pieces = reply.body if isinstance(reply.body, list) else [reply.body]
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                if reply.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                elif reply.hold or reply.abort or isinstance(reply.body, list):
                    self.send_header("Connection", "close")
                    self.close_connection = True
                else:
                    self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                try:
                    for piece in pieces:
                        if not piece:
                            continue
                        if reply.chunked:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        else:
                            self.wfile.write(piece)
                        self.wfile.flush()
                    if reply.abort:
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if reply.hold:
                        while not outer.release.wait(0.05):
                            pass
                    if reply.chunked:
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                except OSError:
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": POLL_INTERVAL}, daemon=True)

    def __enter__(self) -> FakeApiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def count(self, predicate: Callable[[Request], bool]) -> int:
        with self._lock:
            return sum(1 for r in self.requests if predicate(r))


def as_json(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def status_body(code: int, reason: str, message: str = "") -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


def status_reply(code: int, reason: str, message: str = "", retry_after: int | None = None) -> Reply:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return Reply(code, as_json(status_body(code, reason, message)), headers)


def list_reply(items: list[dict[str, Any]], rv: str, cont: str = "") -> Reply:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    body = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": items}
    return Reply(200, as_json(body))


def watch_reply(events: Sequence[dict[str, Any] | bytes], *, hold: bool = False,
                abort: bool = False) -> Reply:
    body = [e if isinstance(e, bytes) else as_json(e) + b"\n" for e in events]
    return Reply(200, body, chunked=True, hold=hold, abort=abort)


def cm(name: str, rv: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": ns, "resourceVersion": rv}, "data": dict(data)}


def fast_client(url: str, **kw: Any) -> KubeClient:
    kw.setdefault("sleep", lambda s: None)
    kw.setdefault("connect_timeout", 5.0)
    kw.setdefault("read_timeout", 10.0)
    return KubeClient.for_host(url, **kw)


def free_port() -> int:
    """A port nothing listens on (bound then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- resource paths -----------------------------------------------------------------------------------------


def test_resource_paths() -> None:
    assert CONFIGMAPS.path() == "/api/v1/configmaps"
    assert CONFIGMAPS.path("ns1") == "/api/v1/namespaces/ns1/configmaps"
    assert CONFIGMAPS.path("ns1", "a") == "/api/v1/namespaces/ns1/configmaps/a"
    status_path = INGRESSES.path("ns", "web", "status")
    assert status_path == "/apis/networking.k8s.io/v1/namespaces/ns/ingresses/web/status"
    assert INGRESSCLASSES.path("ignored", "nginx") == "/apis/networking.k8s.io/v1/ingressclasses/nginx"
    assert NAMESPACES.path(None, "kube-system") == "/api/v1/namespaces/kube-system"
    assert INGRESSES.api_version == "networking.k8s.io/v1"
    assert CONFIGMAPS.api_version == "v1"
    with pytest.raises(ValueError):
        CONFIGMAPS.path("ns", None, "status")


# -- errors -------------------------------------------------------------------------------------------------


def test_api_error_classification() -> None:
    assert ApiError.from_status(status_body(404, "NotFound")).is_not_found
    assert ApiError.from_status(status_body(409, "Conflict")).is_conflict
    exists = ApiError.from_status(status_body(409, "AlreadyExists"))
    assert exists.is_already_exists and not exists.is_conflict
    assert ApiError.from_status(status_body(410, "Expired")).is_gone
    assert ApiError.from_status(status_body(410, "Gone")).is_gone
    assert ApiError.from_status({"kind": "Status", "reason": "Expired"}).is_gone
    assert ApiError.from_status(status_body(429, "TooManyRequests")).is_too_many_requests
    too_large = ApiError.from_status(status_body(504, "Timeout", "Too large resource version: 5, current: 3"))
    assert too_large.is_too_large_resource_version
    cause = {**status_body(504, "Timeout"), "details": {"causes": [{"reason": "ResourceVersionTooLarge"}]}}
    assert ApiError.from_status(cause).is_too_large_resource_version
    weird = ApiError.from_status("not a status")
    assert weird.status == 500 and weird.reason == "InternalError"


# -- verbs and retries over HTTP ----------------------------------------------------------------------------


def test_verbs_send_raw_json_and_parse_raw_json() -> None:
    def handler(req: Request) -> Reply:
        echo = {"kind": "ConfigMap", "method": req.method, "path": req.path, "query": req.query,
                "ctype": req.headers.get("content-type", ""), "body": json.loads(req.body or b"null")}
        return Reply(200, as_json(echo))

    with FakeApiServer(handler) as srv:
        c = fast_client(srv.url, token="s3cret")
        got = c.list(CONFIGMAPS, "ns", resource_version="0", limit=500, label_selector="a=b",
                     field_selector="metadata.name=x")
        assert got["path"] == "/api/v1/namespaces/ns/configmaps"
        assert got["query"] == {"resourceVersion": "0", "limit": "500", "labelSelector": "a=b",
                                "fieldSelector": "metadata.name=x"}
        assert c.get(CONFIGMAPS, "ns", "a")["path"] == "/api/v1/namespaces/ns/configmaps/a"
        assert c.create(CONFIGMAPS, "ns", {"x": 1})["body"] == {"x": 1}
        assert c.update(CONFIGMAPS, "ns", "a", {"y": 2})["method"] == "PUT"
        st = c.update_status(INGRESSES, "ns", "web", {"status": {}})
        assert st["path"].endswith("/ingresses/web/status") and st["method"] == "PUT"
        p = c.patch(CONFIGMAPS, "ns", "a", {"data": {"k": "v"}})
        assert (p["method"], p["ctype"]) == ("PATCH", "application/merge-patch+json")
        p = c.patch(CONFIGMAPS, "ns", "a", [{"op": "add", "path": "/x", "value": 1}], patch_type="json")
        assert p["ctype"] == "application/json-patch+json"
        p = c.patch(INGRESSES, "ns", "a", {"status": {}}, patch_type="strategic", subresource="status")
        assert p["ctype"] == "application/strategic-merge-patch+json" and p["path"].endswith("/a/status")
        d = c.delete(CONFIGMAPS, "ns", "a")
        assert d is not None and d["method"] == "DELETE"
        with pytest.raises(ValueError):
            c.patch(CONFIGMAPS, "ns", "a", {}, patch_type="bogus")  # type: ignore[arg-type]
        assert all(r.headers.get("authorization") == "Bearer s3cret" for r in srv.requests)


def test_errors_carry_the_status_and_are_not_retried_when_permanent() -> None:
    with FakeApiServer(lambda req: status_reply(409, "Conflict", "the object has been modified")) as srv:
        c = fast_client(srv.url)
        with pytest.raises(ApiError) as ei:
            c.update(CONFIGMAPS, "ns", "a", {})
        assert ei.value.is_conflict and ei.value.status == 409
        assert "modified" in ei.value.message
        assert len(srv.requests) == 1


def test_429_is_retried_after_retry_after_then_succeeds() -> None:
    sleeps: list[float] = []
    calls = iter([status_reply(429, "TooManyRequests", "slow down", retry_after=2),
                  status_reply(429, "TooManyRequests", "slow down", retry_after=1),
                  Reply(200, as_json(cm("a", "5")))])
    with FakeApiServer(lambda req: next(calls)) as srv:
        c = fast_client(srv.url, sleep=sleeps.append)
        assert c.get(CONFIGMAPS, "default", "a")["metadata"]["resourceVersion"] == "5"
    assert sleeps == [2.0, 1.0]


def test_transient_5xx_retried_with_bounded_backoff() -> None:
    sleeps: list[float] = []
    with FakeApiServer(lambda req: status_reply(503, "ServiceUnavailable", "down")) as srv:
        c = fast_client(srv.url, sleep=sleeps.append, max_retries=3, retry_backoff=0.1, retry_backoff_max=0.3)
        with pytest.raises(ApiError) as ei:
            c.create(CONFIGMAPS, "ns", cm("a", ""))
        assert ei.value.status == 503
        assert len(srv.requests) == 4  # one try + 3 retries
    assert len(sleeps) == 3 and all(0 < s <= 0.3 for s in sleeps)
    assert sleeps[0] < sleeps[2] or sleeps[2] > 0.1  # grows


def test_non_json_error_body_still_gives_an_api_error() -> None:
    with FakeApiServer(lambda req: Reply(502, b"<html>bad gateway</html>")) as srv:
        c = fast_client(srv.url, max_retries=0)
        with pytest.raises(ApiError) as ei:
            c.get(CONFIGMAPS, "ns", "a")
        assert ei.value.status == 502 and "bad gateway" in ei.value.message


def test_watch_is_not_retried_on_500_without_retry_after() -> None:
    with FakeApiServer(lambda req: status_reply(500, "InternalError", "boom")) as srv:
        c = fast_client(srv.url)
        with pytest.raises(ApiError) as ei:
            c.watch(CONFIGMAPS, resource_version="1", timeout_seconds=5)
        assert ei.value.status == 500
        assert len(srv.requests) == 1
        assert srv.requests[0].query["allowWatchBookmarks"] == "true"
        assert srv.requests[0].query["timeoutSeconds"] == "5"


def test_connection_refused_is_an_api_error_with_status_0() -> None:
    c = fast_client(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ApiError) as ei:
        c.list(CONFIGMAPS)
    assert ei.value.status == 0 and ei.value.is_connection_refused and ei.value.is_network_error


def test_read_timeout_is_an_api_error() -> None:
    gate = threading.Event()

    def handler(req: Request) -> Reply:
        gate.wait(5)
        return Reply(200, b"{}")

    with FakeApiServer(handler) as srv:
        c = fast_client(srv.url, read_timeout=0.2)
        with pytest.raises(ApiError) as ei:
            c.get(CONFIGMAPS, "ns", "a")
        gate.set()
    assert ei.value.status == 0 and ei.value.reason == "Timeout"


def test_client_is_thread_safe_under_concurrent_writers() -> None:
    def handler(req: Request) -> Reply:
        time.sleep(0.01)
        return Reply(200, req.body or b"{}")

    with FakeApiServer(handler) as srv:
        c = fast_client(srv.url, pool_maxsize=16)
        results: list[str] = []
        errors: list[BaseException] = []

        def writer(i: int) -> None:
            try:
                for j in range(10):
                    got = c.create(CONFIGMAPS, "ns", {"n": f"{i}-{j}"})
                    results.append(got["n"])
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert not errors
    assert sorted(results) == sorted(f"{i}-{j}" for i in range(10) for j in range(10))


# -- paged lists --------------------------------------------------------------------------------------------


def paged_handler(pages: int, per_page: int = 3, *, items_first: bool = False,
                  fail_page: int | None = None) -> Callable[[Request], Reply]:
    """Serves `pages` pages of ConfigMaps; the continue token is "p<k>" for page k (1-based)."""

    def handler(req: Request) -> Reply:
        token = req.query.get("continue", "")
        k = int(token[1:]) if token else 1
        if fail_page is not None and k == fail_page:
            return status_reply(410, "Expired", "continue token too old")
        meta: dict[str, Any] = {"resourceVersion": "100"}
        if k < pages:
            meta["continue"] = f"p{k + 1}"
        items = [cm(f"cm-{k}-{i}", str(k * 10 + i)) for i in range(per_page)]
        body = {"items": items, "metadata": meta} if items_first else \
            {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": items}
        return Reply(200, as_json(body))

    return handler


def names(page: dict[str, Any]) -> list[str]:
    return [o["metadata"]["name"] for o in page["items"]]


def wait_for(cond: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


_BEFORE: set[threading.Thread] = set()


@pytest.fixture
def no_old_helpers() -> None:
    """Remember the threads alive before the test, so `helper_threads()` sees only this test's helpers."""
    _BEFORE.clear()
    _BEFORE.update(threading.enumerate())


def helper_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("list-") and t not in _BEFORE]


def test_peek_list_continue_reads_only_the_api_server_layout() -> None:
    head = b'{"kind":"ConfigMapList","apiVersion":"v1","metadata":'
    assert peek_list_continue(head + b'{"resourceVersion":"5","continue":"abc"},"items":[]}') == "abc"
    assert peek_list_continue(head + b'{"resourceVersion":"5"},"items":[]}') == ""  # the last page
    assert peek_list_continue(b'{ "kind" : "L", "apiVersion" : "v1", "metadata" : {"continue": "x",'
                              b' "remainingItemCount": 3}, "items": []}') == "x"
    for unsure in (b'{"items":[],"kind":"L","apiVersion":"v1","metadata":{"continue":"x"}}',  # other order
                   head + b'{"continue":"x}"},"items":[]}',        # a brace inside a string
                   head + b'{"continue":7},"items":[]}',           # not a string
                   head + b'{"continue":"x"',                      # cut short
                   b"", b"[]", b"not json"):
        assert peek_list_continue(unsure) is None, unsure


def test_list_pages_requests_the_next_page_while_the_caller_holds_the_current_one(
        no_old_helpers: None) -> None:
    with FakeApiServer(paged_handler(4)) as srv:
        c = fast_client(srv.url)
        pages = c.list_pages(CONFIGMAPS, "ns", resource_version="0", limit=3, label_selector="a=b")
        first = next(pages)
        assert names(first) == ["cm-1-0", "cm-1-1", "cm-1-2"]
        # Page 2 is requested before the caller asks for it; the helper runs at most two pages ahead.
        wait_for(lambda: len(srv.requests) >= 2, "the prefetch of page 2")
        rest = list(pages)
        assert [names(p)[0] for p in rest] == ["cm-2-0", "cm-3-0", "cm-4-0"]
        queries = [r.query for r in srv.requests]
        assert queries[0] == {"resourceVersion": "0", "limit": "3", "labelSelector": "a=b"}
        assert queries[1:] == [{"limit": "3", "continue": f"p{k}", "labelSelector": "a=b"} for k in (2, 3, 4)]
    wait_for(lambda: not helper_threads(), "the helper thread to end")


def test_list_pages_helper_stays_at_most_two_pages_ahead_and_stops_on_close(no_old_helpers: None) -> None:
    with FakeApiServer(paged_handler(10)) as srv:
        c = fast_client(srv.url)
        pages = c.list_pages(CONFIGMAPS, limit=3)
        next(pages)
        wait_for(lambda: len(srv.requests) >= 3, "the helper to run ahead")
        time.sleep(0.2)  # a negative check: give a runaway helper the time to show itself
        assert len(srv.requests) == 3  # page 1 consumed; page 2 waiting; page 3 fetched, waiting to be put
        pages.close()
        wait_for(lambda: not helper_threads(), "the helper thread to end after close()")
        assert len(srv.requests) == 3


def test_list_pages_raises_a_later_page_error_where_that_page_would_be(no_old_helpers: None) -> None:
    with FakeApiServer(paged_handler(5, fail_page=3)) as srv:
        c = fast_client(srv.url)
        pages = c.list_pages(CONFIGMAPS, limit=3)
        assert names(next(pages))[0] == "cm-1-0"
        assert names(next(pages))[0] == "cm-2-0"
        with pytest.raises(ApiError) as ei:
            next(pages)
        assert ei.value.is_gone
        pages.close()
        wait_for(lambda: not helper_threads(), "the helper thread to end")
        assert len(srv.requests) == 3  # nothing after the failed page


def test_list_pages_first_page_error_is_raised_at_once() -> None:
    with FakeApiServer(lambda req: status_reply(403, "Forbidden", "no")) as srv:
        c = fast_client(srv.url)
        with pytest.raises(ApiError) as ei:
            next(c.list_pages(CONFIGMAPS, limit=3))
        assert ei.value.status == 403


@pytest.mark.parametrize("prefetch", [True, False])
def test_list_pages_handles_other_layouts_and_no_prefetch(prefetch: bool) -> None:
    with FakeApiServer(paged_handler(3, items_first=True)) as srv:
        c = fast_client(srv.url)
        got = [names(p)[0] for p in c.list_pages(CONFIGMAPS, limit=3, prefetch=prefetch)]
        assert got == ["cm-1-0", "cm-2-0", "cm-3-0"]
        assert [r.query.get("continue") for r in srv.requests] == [None, "p2", "p3"]


def test_list_pages_head_that_disagrees_with_the_body_is_an_error(no_old_helpers: None) -> None:
    bad = (b'{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1","continue":"A"},'
           b'"items":[],"metadata":{"resourceVersion":"1","continue":"B"}}')
    with FakeApiServer(lambda req: Reply(200, bad)) as srv:
        c = fast_client(srv.url)
        with pytest.raises(ApiError) as ei:
            list(c.list_pages(CONFIGMAPS, limit=3))
        assert "continue token" in ei.value.message
    wait_for(lambda: not helper_threads(), "the helper thread to end")


def test_list_pages_non_object_page_is_an_api_error() -> None:
    with FakeApiServer(lambda req: Reply(200, b"[1, 2]")) as srv:
        c = fast_client(srv.url)
        with pytest.raises(ApiError) as ei:
            next(c.list_pages(CONFIGMAPS, limit=3))
        assert ei.value.status == 500 and "not an object" in ei.value.message


def test_list_all_restarts_unpaginated_when_a_continue_token_expires() -> None:
    def handler(req: Request) -> Reply:
        if "limit" not in req.query:
            return list_reply([cm("whole", "9")], "200")
        return paged_handler(3, fail_page=2)(req)

    with FakeApiServer(handler) as srv:
        c = fast_client(srv.url)
        items, rv = c.list_all(CONFIGMAPS, page_size=3)
        assert [o["metadata"]["name"] for o in items] == ["whole"] and rv == "200"
        assert [r.query.get("continue") for r in srv.requests] == [None, "p2", None]


# -- kubeconfig ---------------------------------------------------------------------------------------------


def write_kubeconfig(path: Path, server: str, token: str = "tok") -> str:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev",
        "clusters": [{"name": "dev", "cluster": {"server": server}}],
        "users": [{"name": "dev", "user": {"token": token}}],
        "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "dev"}}],
    }))
    return str(path)


def test_from_kubeconfig_path_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeApiServer(lambda req: Reply(200, as_json(cm("a", "1")))) as srv:
        kc = write_kubeconfig(tmp_path / "kc", srv.url, token="abc")
        c = KubeClient.from_kubeconfig(kc)
        assert c.host == srv.url
        c.get(CONFIGMAPS, "default", "a")
        assert srv.requests[-1].headers["authorization"] == "Bearer abc"
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        monkeypatch.setenv("KUBECONFIG", kc)
        assert KubeClient.from_kubeconfig().host == srv.url


def test_bad_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="cannot load"):
        KubeClient.from_kubeconfig(str(tmp_path / "missing"))
    bad = tmp_path / "bad"
    bad.write_text("{not: [valid")
    with pytest.raises(KubeConfigError):
        KubeClient.from_kubeconfig(str(bad))


def test_kubeconfig_pointing_nowhere_fails_each_call_cleanly(tmp_path: Path) -> None:
    kc = write_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{free_port()}")
    c = KubeClient.from_kubeconfig(kc, connect_timeout=2.0)
    for _ in range(2):
        with pytest.raises(ApiError) as ei:
            c.get(CONFIGMAPS, "default", "a")
        assert ei.value.is_connection_refused


# -- WatchStream framing ------------------------------------------------------------------------------------


class FakeResponse:
    """Enough of urllib3's response for WatchStream: read1() returns the scripted chunks, then b""."""

    def __init__(self, chunks: list[bytes | BaseException]) -> None:
        self._chunks: Iterator[bytes | BaseException] = iter(chunks)
        self.closed = False
        self.released = False

    def read1(self, amt: int) -> bytes:
        item = next(self._chunks, b"")
        if isinstance(item, BaseException):
            raise item
        return item

    def shutdown(self) -> None:
        self.closed = True

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        self.released = True


def events_of(chunks: list[bytes | BaseException]) -> list[dict[str, Any]]:
    return list(WatchStream(FakeResponse(chunks), "test"))  # type: ignore[arg-type]


def ev(t: str, name: str, rv: str, **data: str) -> bytes:
    return as_json({"type": t, "object": cm(name, rv, **data)}) + b"\n"


def test_watch_stream_splits_lines_across_chunks_and_utf8_boundaries() -> None:
    raw = ev("ADDED", "a", "1", v="héllo ☃") + ev("MODIFIED", "a", "2") + b"\n" + ev("DELETED", "a", "3")
    chunks = [raw[i:i + 7] for i in range(0, len(raw), 7)]  # 7-byte chunks cut through multibyte chars
    got = events_of(list(chunks))
    assert [e["type"] for e in got] == ["ADDED", "MODIFIED", "DELETED"]
    assert got[0]["object"]["data"]["v"] == "héllo ☃"


def test_watch_stream_accepts_last_event_without_newline() -> None:
    got = events_of([ev("ADDED", "a", "1") + ev("ADDED", "b", "2").rstrip(b"\n")])
    assert [e["object"]["metadata"]["name"] for e in got] == ["a", "b"]


def test_watch_stream_malformed_line_gives_one_error_event_and_ends() -> None:
    with structlog.testing.capture_logs():
        got = events_of([ev("ADDED", "a", "1"), b"{this is not json\n", ev("ADDED", "b", "2")])
    assert [e["type"] for e in got] == ["ADDED", "ERROR"]
    status = got[1]["object"]
    assert status["code"] == 500 and "unable to decode" in status["message"]


def test_watch_stream_non_event_json_is_an_error() -> None:
    got = events_of([b'["a list"]\n'])
    assert got[0]["type"] == "ERROR" and "invalid watch event" in got[0]["object"]["message"]


def test_watch_stream_closed_mid_object_is_logged_and_ends_cleanly() -> None:
    with structlog.testing.capture_logs() as logs:
        got = events_of([ev("ADDED", "a", "1"), b'{"type": "MODIFIED", "object": {"metad'])
    assert [e["type"] for e in got] == ["ADDED"]
    assert any(e["event"].startswith("watch stream closed in the middle of an event") for e in logs)


def test_watch_stream_connection_reset_ends_cleanly() -> None:
    import urllib3

    with structlog.testing.capture_logs() as logs:
        got = events_of([ev("ADDED", "a", "1"), urllib3.exceptions.ProtocolError("reset by peer")])
    assert [e["type"] for e in got] == ["ADDED"]
    assert any(e["event"] == "watch connection ended" for e in logs)


def test_watch_over_http_chunked_then_close() -> None:
    events = [{"type": "ADDED", "object": cm("a", "11")}, {"type": "BOOKMARK",
              "object": {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": "12"}}}]
    with FakeApiServer(lambda req: watch_reply(events)) as srv:
        c = fast_client(srv.url)
        with c.watch(CONFIGMAPS, "default", resource_version="10", timeout_seconds=3) as w:
            got = list(w)
        assert [e["type"] for e in got] == ["ADDED", "BOOKMARK"]
        assert srv.requests[0].query["resourceVersion"] == "10"


def test_watch_410_in_a_non_chunked_body() -> None:
    expired = status_body(410, "Expired", "too old resource version: 1 (9)")
    body = as_json({"type": "ERROR", "object": expired})
    with FakeApiServer(lambda req: Reply(200, body + b"\n")) as srv:
        got = list(fast_client(srv.url).watch(CONFIGMAPS, resource_version="1", timeout_seconds=3))
    assert got[0]["type"] == "ERROR" and ApiError.from_status(got[0]["object"]).is_gone


def test_watch_close_from_another_thread_unblocks_the_reader() -> None:
    reply = watch_reply([{"type": "ADDED", "object": cm("a", "2")}], hold=True)
    with FakeApiServer(lambda req: reply) as srv:
        w = fast_client(srv.url).watch(CONFIGMAPS, resource_version="1", timeout_seconds=60)
        got: list[dict[str, Any]] = []
        t = threading.Thread(target=lambda: got.extend(w))
        t.start()
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            time.sleep(0.01)
        w.close()
        t.join(10)
        assert not t.is_alive()
        assert [e["type"] for e in got] == ["ADDED"]
