"""ingress-nginx's header ConfigMaps: `custom-headers` (response headers) and `auth-proxy-set-headers`
(headers of the auth subrequest), their references, the validation of the headers they hold, and their
resolution for one Ingress from the ConfigMaps the builder read (`IngressEx.config_maps`).

Guarantees (ingress-nginx's `annotations/customheaders/main.go` and `annotations/authreq/main.go`):
- A reference is `name` or `namespace/name` of ingress-nginx's basic characters (letters, digits, `-._~/:`);
  another value rejects the Ingress (ingress-nginx's validator refuses it). Only a ConfigMap of the Ingress's
  own namespace is read: ingress-nginx refuses another namespace unless `allow-cross-namespace-resources`,
  which ingressctl does not honour (false).
- `custom-headers`: every key must be a header name of letters, digits, `-` and `_`, every value match
  ingress-nginx's value characters (printable ASCII without control characters), and every name be listed
  in the NGINX ConfigMap's `global-allowed-response-headers` (exactly as written, as ingress-nginx compares).
- `auth-proxy-set-headers`: every key must be such a header name; every value (stricter than ingress-nginx,
  which checks only names and was open to configuration injection through values) may hold letters, digits,
  spaces, `-._~/:,=+*@!%&?#()[]<>|^'` and NGINX variables NGINX knows (`$name`, `${name}`); no quote, `;`,
  backslash, brace outside `${...}`, backtick or control character.
- A reference that cannot be used (another namespace, the ConfigMap missing, too large for the cache, or any
  header refused) denies the Ingress as ingress-nginx does (`LocationDenied`): every location the annotation
  covers answers 503 (the Ingress's own; a master's also those of minions without that annotation of their
  own: for `auth-proxy-set-headers`, the minions its auth covers), with a warning naming the ConfigMap and
  the problem (a Warning event).
  Nothing is served without its headers, and no auth location is ever left out: a denied location answers
  before any access check. The first problem in the order of the ConfigMap's sorted keys is named.
- `resolve(...)` is pure: it returns new extras (never changes the shared ones); headers come out sorted by
  name, so re-rendering gives the same text.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ingressctl.configs import parsing
from ingressctl.configs.configmaps import ConfigParams
from ingressctl.controller.config_map_cache import DROPPED
from ingressctl.kinds.ingress.ingress_ex import IngressEx
from ingressctl.kinds.ingress.ingress_nginx.auth_request import EXTRA as AUTH_EXTRA
from ingressctl.kinds.ingress.ingress_nginx.auth_request import AuthRequest

_PREFIX = "nginx.ingress.kubernetes.io/"
CUSTOM_HEADERS = _PREFIX + "custom-headers"
AUTH_PROXY_SET_HEADERS = _PREFIX + "auth-proxy-set-headers"
EXTRA = "custom_headers"            # Translation.extras: the custom-headers reference (as written)
RESOLVED = "custom_headers_lines"   # a builder's extras: the validated ((name, value), ...)
DENIED = "custom_headers_denied"    # a builder's extras: why its custom-headers deny its locations (503)
AUTH_DENIED = "auth_headers_denied"  # likewise for auth-proxy-set-headers (the locations its auth covers)

_BASIC_CHARS = re.compile(r"[/\-._~a-zA-Z0-9:]*")
HEADER_NAME = re.compile(r"[a-zA-Z0-9\-_]+")
RESPONSE_VALUE = re.compile(r"[a-zA-Z0-9_ :;.,\\/\"'?!(){}\[\]@<>=\-+*#$&`|~^%]+")
_AUTH_VALUE_TEXT = re.compile(r"[a-zA-Z0-9 \-._~/:,=+*@!%&?#()\[\]<>|^']*")
_VARIABLE = re.compile(r"\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)")

DENIED_MESSAGE = "annotation {annotation}: {reason}; every location of the Ingress answers 503"

Headers = tuple[tuple[str, str], ...]
ConfigMaps = Mapping[str, "Mapping[str, Any] | None"]   # "namespace/name" -> the cached object, or None


def reference(value: str) -> str:
    """The annotation's value parser: ingress-nginx's basic characters (spaces removed, as it does)."""
    if not value.replace(" ", "") or not _BASIC_CHARS.fullmatch(value.replace(" ", "")):
        raise ValueError(f"value {value} is invalid")
    return value


def split_reference(value: str, namespace: str) -> tuple[str, str]:
    """(namespace, name) of `name` or `namespace/name` (client-go's SplitMetaNamespaceKey); ValueError."""
    parts = value.strip().split("/")
    if len(parts) == 1 and parts[0]:
        return namespace, parts[0]
    if len(parts) == 2 and parts[1]:
        return parts[0] or namespace, parts[1]
    raise ValueError(f"unexpected key format: {value!r}")


def referenced_keys(annotations: Mapping[str, Any], namespace: str) -> tuple[str, ...]:
    """The "namespace/name" of the ConfigMaps of the Ingress's namespace its two annotations reference (the
    ones whose changes re-render it); others are never read."""
    out: list[str] = []
    for annotation in (CUSTOM_HEADERS, AUTH_PROXY_SET_HEADERS):
        value = annotations.get(annotation)
        if not isinstance(value, str) or not value:
            continue
        try:
            ns, name = split_reference(value, namespace)
        except ValueError:
            continue
        if ns == namespace:
            out.append(f"{ns}/{name}")
    return tuple(dict.fromkeys(out))


def referenced_config_maps(ing: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """`referenced_keys` of an Ingress as (namespace, name) pairs (its Configuration claims)."""
    meta = ing.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    annotations = meta.get("annotations")
    namespace = str(meta.get("namespace") or "")
    keys = referenced_keys(annotations if isinstance(annotations, Mapping) else {}, namespace)
    return tuple((namespace, k.split("/", 1)[1]) for k in keys)


def response_header_problem(name: str, value: str, allowed: tuple[str, ...]) -> str:
    """Why ingress-nginx refuses a custom response header ("" when it takes it)."""
    if not HEADER_NAME.fullmatch(name):
        return f"invalid header name {name!r} in configmap"
    if not RESPONSE_VALUE.fullmatch(value):
        return f"invalid header value {value!r} of {name} in configmap"
    if name not in allowed:
        return (f"header {name} is not allowed, defined allowed headers inside "
                f"global-allowed-response-headers [{' '.join(allowed)}]")
    return ""


def auth_header_problem(name: str, value: str) -> str:
    """Why a header of `auth-proxy-set-headers` is refused ("" when it is taken)."""
    if not HEADER_NAME.fullmatch(name):
        return f"invalid proxy-set-headers name {name!r} in configmap"
    text = _VARIABLE.sub("", value)
    if not _AUTH_VALUE_TEXT.fullmatch(text):
        return (f"invalid proxy-set-headers value {value!r} of {name} in configmap: only letters, digits, "
                "spaces, -._~/:,=+*@!%&?#()[]<>|^' and NGINX variables")
    unknown = parsing.unknown_variables(value)
    if unknown:
        return f"invalid proxy-set-headers value of {name}: unknown NGINX variable(s) {', '.join(unknown)}"
    return ""


def headers_of(value: str, namespace: str, config_maps: ConfigMaps,
               problem: Callable[[str, str], str]) -> tuple[Headers, str]:
    """(the ConfigMap's headers sorted by name, "") or ((), why it cannot be used)."""
    try:
        ns, name = split_reference(value, namespace)
    except ValueError as e:
        return (), f"error reading configmap name from annotation: {e}"
    if ns != namespace:
        return (), "cross namespace usage of configmaps is not allowed"
    key = f"{ns}/{name}"
    cm = config_maps.get(key)
    if cm is None:
        return (), f"unable to find configMap {key!r}"
    if cm.get(DROPPED):
        return (), f"configMap {key!r} is too large to hold headers ({cm.get(DROPPED)})"
    data = cm.get("data")
    data = data if isinstance(data, Mapping) else {}
    headers: list[tuple[str, str]] = []
    for k in sorted(data):
        v = data[k]
        why = problem(str(k), v) if isinstance(v, str) else f"the value of {k} is not a string"
        if why:
            return (), f"configMap {key!r}: {why}"
        headers.append((str(k), v))
    return tuple(headers), ""


class Settings(Protocol):
    """What `resolve` reads of an annotation set's shared settings (`kinds/ingress/settings.py`)."""

    @property
    def params(self) -> ConfigParams: ...

    @property
    def ingress_nginx_extras(self) -> Mapping[str, Any]: ...


def resolve(settings: Settings, ing_ex: IngressEx, warnings: list[str]) -> Mapping[str, Any]:
    """For a builder: the extras of its shared settings (auth-url, satisfy, ...: render.py) with the custom
    headers (RESOLVED) and the auth subrequest's headers (`AuthRequest.proxy_headers`) read from their
    ConfigMaps (`ing_ex.config_maps`), or DENIED / AUTH_DENIED; warnings appended. Extras without either
    reference come back as they are (the shared object)."""
    extras, params = settings.ingress_nginx_extras, settings.params
    auth: AuthRequest | None = extras.get(AUTH_EXTRA)
    if EXTRA not in extras and (auth is None or not auth.proxy_set_headers):
        return extras
    namespace, config_maps = ing_ex.namespace, ing_ex.config_maps
    allowed = params.ingress_nginx_allowed_response_headers
    out = dict(extras)
    if EXTRA in extras:
        headers, why = headers_of(extras[EXTRA], namespace, config_maps,
                                  lambda n, v: response_header_problem(n, v, allowed))
        if why:
            warnings.append(DENIED_MESSAGE.format(annotation=CUSTOM_HEADERS, reason=why))
            out[DENIED] = why
        else:
            out[RESOLVED] = headers
    if auth is not None and auth.proxy_set_headers:
        headers, why = headers_of(auth.proxy_set_headers, namespace, config_maps, auth_header_problem)
        if why:
            warnings.append(DENIED_MESSAGE.format(annotation=AUTH_PROXY_SET_HEADERS, reason=why))
            out[AUTH_DENIED] = why
        else:
            out[AUTH_EXTRA] = dataclasses.replace(auth, proxy_headers=headers)
    return out


def combine(parsed: dict[str, Any], raw: dict[str, str], out: Any) -> None:
    """The translator's combiner: `out.extras[EXTRA]` = the `custom-headers` reference (read per Ingress by
    `resolve`); `auth-proxy-set-headers` goes with `auth-url` (`auth_request.combine`)."""
    if CUSTOM_HEADERS in parsed:
        out.extras[EXTRA] = parsed[CUSTOM_HEADERS]
