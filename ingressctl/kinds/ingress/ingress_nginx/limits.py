"""ingress-nginx's connection limit and rate-limit allowlist for one Ingress: the http-level zones and maps
and the location's `limit_conn` (`limit-connections`, `limit-whitelist` / `limit-allowlist`).

Guarantees:
- Names are derived from the Ingress's namespace and name only, so re-rendering gives the same text; the
  connection zone `<ns>/<name>/conn` can collide with no `limit_req` zone (`<ns>/<name>`: names have no `/`).
- An exempt client's key is "" (the `map`), which NGINX neither rate- nor connection-limits, as
  ingress-nginx's `geo` + `map` do.
"""

from __future__ import annotations

import hashlib

from ingressctl.configs.config import LimitConn, LimitConnZone, LimitKeyMap

CLIENT_KEY = "$binary_remote_addr"
ZONE_SIZE = "5m"
LIMIT_STATUS = 503


def key_map(namespace: str, name: str, key: str, exempt: tuple[str, ...]) -> LimitKeyMap:
    """The map that turns `key` into "" for the exempt sources."""
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:16]
    return LimitKeyMap(geo_var=f"$ingressctl_limit_exempt_{digest}",
                       key_var=f"$ingressctl_limit_key_{digest}",
                       key=key, exempt=exempt)


def connection_limit(namespace: str, name: str, limit: int, key: str) -> tuple[LimitConnZone, LimitConn]:
    zone = f"{namespace}/{name}/conn"
    return LimitConnZone(name=zone, key=key, size=ZONE_SIZE), LimitConn(zone=zone, limit=limit,
                                                                         status=LIMIT_STATUS)
