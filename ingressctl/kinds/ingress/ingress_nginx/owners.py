"""Which Ingress of a rendered model a location belongs to, for the ingress-nginx translations that apply an
Ingress's own settings to its locations (external auth, copies, one-directive lines, affinity).

Guarantees:
- `owner_of(loc, master)` is the location's minion, or else the model's Ingress (a regular one or a master),
  as (namespace, name).
- `owned(values, loc, master)` is (owner, value) of the settings that apply to the location: its owner's, or
  else the model Ingress's (a master's cover the minions without their own, not the members of a shared
  host: `inherits`); None when neither has any.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from ingressctl.configs.config import IngressMeta, Location

Owner = tuple[str, str]
T = TypeVar("T")


def owner_of(loc: Location, master: IngressMeta) -> Owner:
    m = loc.minion
    return (m.namespace, m.name) if m is not None else (master.namespace, master.name)


def inherits(loc: Location) -> bool:
    """Whether the model Ingress's settings cover the location when its own Ingress has none: not for a
    member of a shared host (ingress-nginx applied each Ingress's annotations to its own paths only)."""
    return loc.minion is None or not loc.minion.member


def owned(values: Mapping[Owner, T], loc: Location, master: IngressMeta) -> tuple[Owner, T] | None:
    own = owner_of(loc, master)
    for owner in (own, (master.namespace, master.name)) if inherits(loc) else (own,):
        value = values.get(owner)
        if value is not None:
            return owner, value
    return None
