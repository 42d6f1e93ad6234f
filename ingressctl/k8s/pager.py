"""The pages of one list, after client-go's `tools/pager`: continue tokens, growing page limits, prefetch.

Guarantees:
- `paged_list` yields a list's pages in order; an error is raised where the failing page would have been
  yielded. With prefetch (the default), it requests page k+1 in a helper thread while the caller decodes
  and ingests page k; the continue token is read from the head of the body when the server uses its usual
  layout (`peek_list_continue`), and a page is decoded only once. The helper runs at most two pages ahead
  and ends with the list, with the first error (raised to the caller where that page would have been) or
  when the iterator is closed. A peeked token that differs from the decoded one fails the list.
- `page_limits`: each continue page asks for twice the previous page's limit, up to `max_limit`, so a long
  list costs O(log) round trips after its first page instead of one per `limit` items.
"""

from __future__ import annotations

import contextlib
import queue
import re
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

from ingressctl.k8s.codec import raw_loads
from ingressctl.k8s.errors import ApiError

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
        meta = raw_loads(m.group(1))
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
