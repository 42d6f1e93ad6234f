"""Parts of a shared file that NGINX refuses: an Ingress's file also serves the paths of the other Ingresses
of its shared hosts (its members); one member's broken `configuration-snippet` must not take the owner and
the other members down, nor hold back their changes, and the owner's must not hold back the members'.

Guarantees:
- `search` finds the parts to hold back by testing candidate files (nginx -t on a staging copy, never a
  reload): first with every part at its last served version (left out if it was never served); if that
  fails too, the resource itself is to blame (None: nothing changes). Then each part's new version is tried
  in the renderer's order and kept if the file still passes. At most one test more than the file has parts,
  and only for a file that NGINX already refused.
- `HeldBackParts` remembers what `search` held back: `effective` renders the resource with those parts at
  their last served version (as a resource NGINX refuses keeps its last good file) while neither the
  resource's version nor the part's changed, and queues their errors for the next outcome; a change to
  either tries the part's new version again.
- When the file fails even with every part at its last served version, the resource's own new version is
  tried at fault: its last served version with the parts' new versions is searched the same way; if that
  passes, the resource is held back too (its error reported as its own, the parts served).
- The last served version is the one in the file of the last reload that did not refuse it (`reloaded`);
  `take_errors` hands each held-back error once per render of its resource.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from ingressctl.configs.renderers import Parts, PartSplitter, Rendered
from ingressctl.configs.templates import TemplateRenderError
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


def held_back(parts: Parts, served: object | None, served_parts: Mapping[ResourceKey, object], error: str,
              tester: Callable[[object | None], PartTest]) -> tuple[dict[ResourceKey, str], str] | None:
    """What to hold back of a file NGINX refused with `error`: (the parts, with their errors; the resource's
    own error when it is held back too), or None. `tester(base)` tests the file with the resource's new
    version (base None) or with `base`, another version of it, with the new version's parts."""
    bad, own_error = search(parts, served_parts, tester(None)), ""
    if bad is None and served is not None:  # the resource's own new version is at fault
        bad, own_error = search(parts, served_parts, tester(served)), error
    return (bad, own_error) if bad is not None and (bad or own_error) else None


@dataclass
class _HeldBack:
    version: str                                               # the resource's, when its parts were held back
    parts: dict[ResourceKey, tuple[str, str]] = field(default_factory=dict)  # part -> (its version, error)
    own_error: str = ""  # set: the resource itself is served at its last served version, with this error


@dataclass(frozen=True)
class _Served:
    resource: object                   # what was rendered (the parts held back at their served versions)
    parts: dict[ResourceKey, object]   # its parts


class HeldBackParts:
    """See the module docstring. Not thread-safe (the Configurator's sync thread owns it)."""

    def __init__(self) -> None:
        self._held: dict[ResourceKey, _HeldBack] = {}
        self._errors: dict[ResourceKey, dict[ResourceKey, str]] = {}  # queued for the next outcome
        self._own_errors: dict[ResourceKey, str] = {}                 # the same, of resources held back
        self._served: dict[ResourceKey, _Served] = {}
        self._rendered: dict[ResourceKey, _Served] = {}  # rendered since the last reload

    def served(self, key: ResourceKey) -> tuple[object | None, dict[ResourceKey, object]]:
        """What the last reload that took `key`'s file served of it: (the resource, its parts)."""
        served = self._served.get(key)
        return (served.resource, served.parts) if served is not None else (None, {})

    def hold_back(self, key: ResourceKey, parts: Parts, bad: Mapping[ResourceKey, str],
                  own_error: str = "") -> None:
        """Serve `bad` at their last served versions in `key`'s file from now on, and with `own_error` the
        resource itself too (see the module doc)."""
        self._held[key] = _HeldBack(parts.version, {p: (parts.versions[p], err) for p, err in bad.items()},
                                    own_error)
        log.warning("serving a shared file with the last served version of what NGINX refuses",
                    resource=str(key), parts=sorted(str(p) for p in bad), itself=bool(own_error))

    def search_file(self, key: ResourceKey, splitter: PartSplitter, resource: object, error: str,
                    render: Callable[[object], Rendered], test: Callable[[str], tuple[bool, str]]) -> bool:
        """`key`'s file, rendered from `resource`, was refused with `error`: hold back what NGINX refuses of
        it (`held_back`, rendering candidates with `render` and testing their text with `test`). True if
        something is held back (render the file again)."""
        parts = splitter.parts(resource)
        if not parts.versions:  # (a resource without parts is refused whole, as any other)
            return False
        served, served_parts = self.served(key)

        def tester(base: object | None) -> PartTest:
            whole = resource if base is None else splitter.with_parts_of(base, resource)

            def candidate(replace: Mapping[ResourceKey, object | None]) -> tuple[bool, str]:
                try:
                    text = render(splitter.with_parts(whole, replace)).text
                except (ValueError, TemplateRenderError) as e:
                    return False, f"error generating configuration: {e}"
                return test(text)
            return candidate

        found = held_back(parts, served, served_parts, error, tester)
        if found is not None:
            self.hold_back(key, parts, *found)
        return found is not None

    def effective(self, key: ResourceKey, splitter: PartSplitter | None, resource: object) -> object:
        """What to render for `key` (`splitter`: its renderer, when that splits files into parts)."""
        self._errors.pop(key, None)
        self._own_errors.pop(key, None)
        if splitter is None:
            return resource
        held = self._held.get(key)
        if held is not None:
            parts = splitter.parts(resource)
            served, served_parts = self.served(key)
            still = {p: err for p, (v, err) in held.parts.items() if parts.versions.get(p) == v}
            own = bool(held.own_error) and served is not None
            if parts.version != held.version or not (still or own):
                del self._held[key]
            else:
                if own:
                    self._own_errors[key] = held.own_error
                    resource = splitter.with_parts_of(served, resource)
                if still:
                    self._errors[key] = still
                    resource = splitter.with_parts(resource, {p: served_parts.get(p) for p in still})
        objects = splitter.part_objects(resource)
        if objects or key in self._served:
            self._rendered[key] = _Served(resource, objects)
        return resource

    def reloaded(self, refused: Collection[ResourceKey]) -> None:
        """A reload took the files rendered since the last one, except those of `refused`."""
        for key, rendered in self._rendered.items():
            if key in refused:
                continue
            if rendered.parts:
                self._served[key] = rendered
            else:
                self._served.pop(key, None)
        self._rendered.clear()

    def forget(self, key: ResourceKey) -> None:
        for state in (self._held, self._errors, self._own_errors, self._served, self._rendered):
            state.pop(key, None)

    def take_errors(self) -> tuple[dict[ResourceKey, dict[ResourceKey, str]], dict[ResourceKey, str]]:
        """The errors queued since the last call: of parts (resource -> part -> error), and of resources
        served at their last served version (resource -> error)."""
        errors, self._errors = self._errors, {}
        own, self._own_errors = self._own_errors, {}
        return errors, own
