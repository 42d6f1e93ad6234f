"""An Ingress's ingress-nginx annotations against its `nginx.org/*` ones: the ConfigMap params with the
ingress-nginx translation applied, on which the `nginx.org/*` annotations are then parsed.

Guarantees:
- Where an `nginx.org/*` (or `ingress.kubernetes.io/ssl-redirect`) annotation and an ingress-nginx one set the
  same setting, the `nginx.org/*` one wins: every setting of that ingress-nginx annotation is dropped (never
  half of it, e.g. the rate of one and the burst of the other), with a warning naming both. The same for
  `nginx.org/ssl-services` / `grpc-services` against `backend-protocol`.
- ingress-nginx's own defaults (the 308 of the HTTPS redirects) give way to an `nginx.org/*` annotation
  silently: they are not something the author wrote.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.kinds.ingress.annotation_table import Handling
from ingressctl.kinds.ingress.annotations_ingress_nginx import BACKEND_PROTOCOL
from ingressctl.kinds.ingress.annotations_nginx_org import NGINX_ORG
from ingressctl.kinds.ingress.ingress_nginx.translate import Translation, translate

_DEFAULT_REDIRECT_CODE = ConfigParams().http_redirect_code
_SETS_FIELD = (Handling.FIELD, Handling.PROXY_REDIRECT)
# The field each nginx.org row sets, and the rows setting the per-Service protocols.
_NGINX_ORG_FIELDS = {r.key: r.sets for r in NGINX_ORG.rows if r.handling in _SETS_FIELD}
_NGINX_ORG_PROTOCOLS = tuple(r.key for r in NGINX_ORG.rows if r.sets in ("ssl_services", "grpc_services"))


@dataclass(frozen=True)
class CompatSettings:
    base: ConfigParams            # the ConfigMap params with the ingress-nginx translation applied
    warnings: list[str]
    errors: tuple[str, ...]
    ssl_all: bool                 # backend-protocol HTTPS or GRPCS
    grpc_all: bool                # backend-protocol GRPC or GRPCS
    translation: Translation


def ingress_nginx_settings(annotations: Mapping[str, str], config: ConfigParams,
                           snippets_enabled: bool) -> CompatSettings:
    """See the module docstring."""
    tr = translate(annotations, snippets_enabled=snippets_enabled,
                   redirect_code_is_default=config.http_redirect_code == _DEFAULT_REDIRECT_CODE)
    winners: dict[str, str] = {}  # field -> the nginx.org annotation that sets it
    for k in annotations:
        name = _NGINX_ORG_FIELDS.get(k)
        if name is not None:
            winners.setdefault(name, k)
    losers: dict[str, tuple[str, str]] = {}  # ingress-nginx annotation -> (nginx.org annotation, field)
    for name, origin in tr.origin.items():
        if origin and name in winners:
            losers.setdefault(origin, (winners[name], name))
    warnings = [f"annotation {winner} wins over {loser} (both set {name}); {loser} is ignored"
                for loser, (winner, name) in sorted(losers.items())]
    overrides = {name: value for name, value in tr.overrides.items()
                 if tr.origin.get(name,
                                  "") not in losers and not (not tr.origin.get(name) and name in winners)}
    protocol = tr.backend_protocol
    if protocol:
        given = [k for k in _NGINX_ORG_PROTOCOLS if k in annotations]
        if given:
            warnings.append(f"annotation {given[0]} wins over {BACKEND_PROTOCOL}; "
                            f"{BACKEND_PROTOCOL} is ignored")
            protocol = ""
    warnings.extend(tr.warnings)
    base = dataclasses.replace(config, **overrides) if overrides else config
    return CompatSettings(base=base, warnings=warnings, errors=tr.errors,
                          ssl_all=protocol in ("HTTPS", "GRPCS"), grpc_all=protocol in ("GRPC", "GRPCS"),
                          translation=tr)
