"""What the ingress-nginx translation renders itself (`Translation.extras`), applied to an Ingress's model
after its Policies: the external auth subrequest (`auth_render.py`), the 503 of a denied basic auth
(`basic_auth.py`; the basic auth itself is the builder's), the one-directive annotations, `satisfy` among
them (`location_lines.py`), the sticky cookie of `affinity` (`affinity.py`) and the request copies of
`mirror-target` (`mirror.py`), and the `custom-headers` with the denial of a header ConfigMap
(`custom_headers.py`).

Guarantees:
- `apply_extras(cfg, extras)` takes the extras of the regular Ingress or master and of each minion served in
  the file, by (namespace, name), and returns the model and warnings; without extras it returns `cfg`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.configs.config import IngressNginxConfig
from ingressctl.kinds.ingress.ingress_nginx import affinity, auth_request, basic_auth, mirror
from ingressctl.kinds.ingress.ingress_nginx.auth_render import apply_auth_requests
from ingressctl.kinds.ingress.ingress_nginx.custom_headers import apply_custom_headers
from ingressctl.kinds.ingress.ingress_nginx.location_lines import apply_location_lines, lines_of

Owner = tuple[str, str]


def apply_extras(cfg: IngressNginxConfig, extras: Mapping[Owner, Mapping[str, Any]]
                 ) -> tuple[IngressNginxConfig, list[str]]:
    """See the module docstring."""
    if not any(extras.values()):
        return cfg, []
    auths = {o: e[auth_request.EXTRA] for o, e in extras.items() if auth_request.EXTRA in e}
    cfg, warnings = apply_auth_requests(cfg, auths)
    cfg = basic_auth.apply_denied(cfg, extras)
    cfg = apply_custom_headers(cfg, extras)
    lines = {o: own for o, e in extras.items() if (own := lines_of(e)) is not None}
    cfg = apply_location_lines(cfg, lines)
    cookies = {o: e[affinity.EXTRA] for o, e in extras.items() if affinity.EXTRA in e}
    cfg = affinity.apply_affinity(cfg, cookies)
    cfg = mirror.apply_mirrors(cfg, {o: e[mirror.EXTRA] for o, e in extras.items() if mirror.EXTRA in e})
    return cfg, warnings
