"""Independent API reads issued at once and taken later, where the code would otherwise have made them one
after the other: N reads cost about one round trip instead of N.

Guarantees:
- `start(key, call)` runs `call()` at once in a daemon thread of its own (a read still in flight never holds
  up the process's exit). The caller must issue only reads whose outcome does not depend on each other.
- `take(key, call)` returns what the call started under `key` returned, or raises in the caller's thread the
  exception it raised, exactly as if the caller had made the call there; each started call is taken at most
  once. Without a started call under `key`, `take` makes `call()` itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class _Read:
    __slots__ = ("done", "error", "value")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class ReadAhead:
    """See the module docstring."""

    def __init__(self, name: str = "read-ahead") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._reads: dict[Hashable, _Read] = {}

    def start(self, key: Hashable, call: Callable[[], Any]) -> None:
        read = _Read()
        with self._lock:
            if key in self._reads:
                raise ValueError(f"a read is already started under {key!r}")
            self._reads[key] = read

        def run() -> None:
            try:
                read.value = call()
            except BaseException as e:  # re-raised by take() in the caller's thread
                read.error = e
            finally:
                read.done.set()

        threading.Thread(target=run, name=f"{self._name}-{len(self._reads)}", daemon=True).start()

    def take(self, key: Hashable, call: Callable[[], T]) -> T:
        with self._lock:
            read = self._reads.pop(key, None)
        if read is None:
            return call()
        read.done.wait()
        if read.error is not None:
            error, read.error = read.error, None
            raise error
        return read.value  # type: ignore[no-any-return]

    def pending(self) -> list[Hashable]:
        """Keys started and not taken yet."""
        with self._lock:
            return list(self._reads)
