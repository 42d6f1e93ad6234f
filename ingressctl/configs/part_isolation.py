"""Parts of a shared file that NGINX refuses: an Ingress's file also serves the paths of the other Ingresses
of its shared hosts (its members); one member's broken `configuration-snippet` must not take the owner and
the other members down, nor hold back their changes.

Guarantees:
- `search` finds the parts to hold back by testing candidate files (nginx -t on a staging copy, never a
  reload): first with every part at its last served version (left out if it was never served); if that
  fails too, the resource itself is to blame (None: nothing changes). Then each part's new version is tried
  in the renderer's order and kept if the file still passes. At most one test more than the file has parts,
  and only for a file that NGINX already refused.
- `PartExclusions` remembers what `search` held back: `effective` renders the resource with those parts at
  their last served version (as a resource NGINX refuses keeps its last good file) while neither the
  resource's version nor the part's changed, and queues their errors for the next outcome; a change to
  either tries the part's new version again.
- The last served version of a part is the one in the file of the last reload that did not refuse it
  (`reloaded`); `take_errors` hands each held-back part's error once per render of its resource.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from ingressctl.configs.renderers import Parts, PartSplitter
from ingressctl.keys import ResourceKey
from ingressctl.logging import get_logger

log = get_logger(__name__)

PartTest = Callable[[Mapping[ResourceKey, object | None]], tuple[bool, str]]
"""Render the resource with these parts swapped (None: left out) and test the file: (passes, the error)."""


def search(parts: Parts, served: Mapping[ResourceKey, object],
           test: PartTest) -> dict[ResourceKey, str] | None:
    """The parts whose new version NGINX refuses, with the error of each; None when the file fails with
    every part at its last served version."""
    old: dict[ResourceKey, object | None] = {p: served.get(p) for p in parts.versions}
    ok, _ = test(old)
    if not ok:
        return None
    bad: dict[ResourceKey, str] = {}
    for part in parts.versions:
        trial = {p: v for p, v in old.items() if p != part}
        ok, error = test(trial)
        if ok:
            old = trial
        else:
            bad[part] = error
    return bad


@dataclass
class _HeldBack:
    version: str                                               # the resource's, when its parts were held back
    parts: dict[ResourceKey, tuple[str, str]] = field(default_factory=dict)  # part -> (its version, error)


class PartExclusions:
    """See the module docstring. Not thread-safe (the Configurator's sync thread owns it)."""

    def __init__(self) -> None:
        self._held: dict[ResourceKey, _HeldBack] = {}
        self._errors: dict[ResourceKey, dict[ResourceKey, str]] = {}
        self._served: dict[ResourceKey, dict[ResourceKey, object]] = {}    # resource -> part -> served one
        self._rendered: dict[ResourceKey, dict[ResourceKey, object]] = {}  # the same, rendered since a reload

    def served(self, key: ResourceKey) -> dict[ResourceKey, object]:
        return self._served.get(key, {})

    def hold_back(self, key: ResourceKey, parts: Parts, bad: Mapping[ResourceKey, str]) -> None:
        """Serve `bad` at their last served versions in `key`'s file from now on (see the module doc)."""
        self._held[key] = _HeldBack(parts.version, {p: (parts.versions[p], err) for p, err in bad.items()})
        log.warning("serving a shared file with the last served version of the parts NGINX refuses",
                    resource=str(key), parts=sorted(str(p) for p in bad))

    def effective(self, key: ResourceKey, splitter: PartSplitter | None, resource: object) -> object:
        """What to render for `key` (`splitter`: its renderer, when that splits files into parts)."""
        self._errors.pop(key, None)
        if splitter is None:
            return resource
        held = self._held.get(key)
        if held is not None:
            parts = splitter.parts(resource)
            still = {p: err for p, (v, err) in held.parts.items()
                     if parts.version == held.version and parts.versions.get(p) == v}
            if still:
                self._errors[key] = still
                served = self.served(key)
                resource = splitter.with_parts(resource, {p: served.get(p) for p in still})
            else:
                del self._held[key]
        objects = splitter.parts(resource).objects
        if objects or key in self._served:
            self._rendered[key] = objects
        return resource

    def reloaded(self, refused: Collection[ResourceKey]) -> None:
        """A reload took the files rendered since the last one, except those of `refused`."""
        for key, objects in self._rendered.items():
            if key in refused:
                continue
            if objects:
                self._served[key] = objects
            else:
                self._served.pop(key, None)
        self._rendered.clear()

    def forget(self, key: ResourceKey) -> None:
        for state in (self._held, self._errors, self._served, self._rendered):
            state.pop(key, None)

    def take_errors(self) -> dict[ResourceKey, dict[ResourceKey, str]]:
        errors, self._errors = self._errors, {}
        return errors
