"""The demo's VirtualServer checks: curl commands derived from the VirtualServers of the demo cluster.

Guarantees:
- `virtual_server_checks(client)` turns each VirtualServer route of our class into checks: a route whose
  action passes to an upstream expects that upstream's Service; a match on a header expects its action's
  Service when the header is sent; a split expects one of its Services. Only `pass` actions are checked;
  routes with Policies (of the VirtualServer or their own) are left out, as a plain request is refused
  there by design (the README shows them with their credentials).
- `run_check` requests a check (retrying briefly, as the Ingress checks do) and says whether it passed.
"""

from __future__ import annotations

import http.client
import time
from dataclasses import dataclass, field
from typing import Any

from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERS


@dataclass
class VSCheck:
    host: str
    path: str
    services: set[str]                       # any of them is right
    headers: dict[str, str] = field(default_factory=dict)
    note: str = ""

    def curl(self, port: int) -> str:
        hdrs = "".join(f" -H '{k}: {v}'" for k, v in self.headers.items())
        return f"curl -H 'Host: {self.host}'{hdrs} http://127.0.0.1:{port}{self.path}"


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def virtual_server_checks(client: Any, ingress_class: str = "nginx") -> list[VSCheck]:
    checks: list[VSCheck] = []
    for vs in client.list(VIRTUALSERVERS, None)["items"]:
        spec = _d(vs.get("spec"))
        if (spec.get("ingressClassName") or ingress_class) != ingress_class:
            continue
        services = {str(_d(u).get("name")): str(_d(u).get("service")) for u in spec.get("upstreams") or []}
        host = str(spec.get("host") or "")
        if spec.get("policies"):
            continue
        for route in spec.get("routes") or []:
            r = _d(route)
            path = str(r.get("path") or "")
            if not path.startswith("/") or r.get("policies"):
                continue
            for m in r.get("matches") or []:
                conds = _d(m).get("conditions") or []
                target = _d(_d(m).get("action")).get("pass")
                if len(conds) == 1 and _d(conds[0]).get("header") and target in services:
                    c = _d(conds[0])
                    checks.append(VSCheck(host, path, {services[target]}, {str(c["header"]): str(c["value"])},
                                          "match"))
            target = _d(r.get("action")).get("pass")
            if target in services:
                checks.append(VSCheck(host, path, {services[target]}))
            split = {services[p] for s in r.get("splits") or []
                     if (p := _d(_d(s).get("action")).get("pass")) in services}
            if split:
                weights = "/".join(str(_d(s).get("weight")) for s in r.get("splits") or [])
                checks.append(VSCheck(host, path, split, note=f"split {weights}"))
    return checks


def _get(port: int, check: VSCheck) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", check.path, headers={"Host": check.host, "Connection": "close", **check.headers})
        r = conn.getresponse()
        r.read()
        return r.status, r.getheader("X-Backend") or ""
    finally:
        conn.close()


def run_check(port: int, check: VSCheck, deadline: float = 20.0) -> tuple[bool, int, str]:
    end = time.monotonic() + deadline
    status, backend = 0, ""
    while True:
        try:
            status, backend = _get(port, check)
        except OSError:
            status, backend = 0, ""
        if status == 200 and backend in check.services:
            return True, status, backend
        if time.monotonic() >= end:
            return False, status, backend
        time.sleep(0.2)
