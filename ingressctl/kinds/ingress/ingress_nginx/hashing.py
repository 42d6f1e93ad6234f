"""ingress-nginx's consistent-hashing subsets (`upstream-hash-by-subset`, `upstream-hash-by-subset-size`):
what ingressctl makes of them beside `upstream-hash-by`.

Guarantees:
- Nothing is rendered for them: `upstream-hash-by`'s `hash <key> consistent` stays the Ingress's load
  balancing. ingress-nginx hashed a key to a subset of `subset-size` endpoints (default 3) and picked one of
  them at random per request; here a key reaches one endpoint, always the same while the endpoints do not
  change (approximated, named in the Warning event).
- `subset: "false"` is served (plain consistent hashing, as ingress-nginx); without `upstream-hash-by` both
  are ignored (ingress-nginx reads them only with it), and `subset-size` without `subset: "true"` too; each
  with the reason.
- Pure: the statuses follow from the parsed values alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.kinds.ingress import annotations_ingress_nginx as t
from ingressctl.kinds.ingress.annotation_table import Status


def subset_statuses(parsed: Mapping[str, Any]) -> dict[str, tuple[Status, str]]:
    """key -> (status, reason) for the subset annotations whose status is not their row's (see above)."""
    subset, size = parsed.get(t.UPSTREAM_HASH_BY_SUBSET), parsed.get(t.UPSTREAM_HASH_BY_SUBSET_SIZE)
    present = [k for k, v in ((t.UPSTREAM_HASH_BY_SUBSET, subset), (t.UPSTREAM_HASH_BY_SUBSET_SIZE, size))
               if v is not None]
    if not present:
        return {}
    if t.UPSTREAM_HASH_BY not in parsed:
        return {k: (Status.IGNORED, f"{t.UPSTREAM_HASH_BY} is not set (ingress-nginx ignores it too)")
                for k in present}
    out: dict[str, tuple[Status, str]] = {}
    if subset is False:
        out[t.UPSTREAM_HASH_BY_SUBSET] = (Status.SERVED, "off: one endpoint per key, as ingress-nginx")
    if size is not None and subset is not True:
        out[t.UPSTREAM_HASH_BY_SUBSET_SIZE] = (Status.IGNORED, f"{t.UPSTREAM_HASH_BY_SUBSET} is not true")
    return out
