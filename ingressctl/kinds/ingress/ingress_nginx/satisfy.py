"""ingress-nginx's `satisfy` annotation: whether a request must pass all of its location's access checks
(client address rules, basic auth, the auth subrequest) or any one of them.

Guarantees:
- As ingress-nginx (`satisfy/main.go`, options `any` and `all`, spaces trimmed, case-sensitive): a valid
  value is `satisfy <value>;` in every location of the Ingress (of a minion: its own; of a master: those of
  minions without their own; written by `location_lines.py`); an invalid value is ignored with a warning, as
  ingress-nginx drops it.
- It applies to every access check NGINX runs in those locations, including those of `nginx.org/*`
  annotations and Policies (`allow`/`deny`, `auth_basic`, `auth_request`), as NGINX's `satisfy` does.
"""

from __future__ import annotations

from typing import Any

from ingressctl.kinds.ingress.annotation_table import Status

KEY = "nginx.ingress.kubernetes.io/satisfy"   # the table's row (the table imports this module's users)
EXTRA = "satisfy"
OPTIONS = ("any", "all")


def combine(parsed: dict[str, Any], raw: dict[str, str], out: Any) -> None:
    """The translator's combiner: `out.extras[EXTRA]` = "any" or "all"."""
    if KEY not in parsed:
        return
    value = str(parsed[KEY]).strip()
    if value not in OPTIONS:
        out.mark(KEY, Status.IGNORED, "invalid value (ingress-nginx ignores it too): must be 'any' or 'all'")
        return
    out.extras[EXTRA] = value
