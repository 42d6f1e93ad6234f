"""ingress-nginx's basic authentication (`auth-type: basic`, `auth-secret`, `auth-secret-type`, `auth-realm`),
translated onto what `nginx.org/basic-auth-secret` renders: `auth_basic "<realm>"` and `auth_basic_user_file`
of the htpasswd file the Secret store writes (on the server of a regular Ingress or master, in the locations
of a minion).

Guarantees (ingress-nginx's `annotations/auth/main.go`):
- Values are checked as ingress-nginx's validators do (spaces removed where it removes them): `auth-type`
  must match `basic|digest`, `auth-secret-type` `auth-file|auth-map`, `auth-secret` ingress-nginx's basic
  characters, `auth-realm` those and spaces; a value they refuse rejects the Ingress.
- `auth-type` other than exactly `basic` is refused: ingress-nginx configures digest authentication for it,
  which NGINX does not have. Without `auth-type` the other three are ignored with a warning, as
  ingress-nginx ignores them.
- The Secret is `auth-secret` (`name`, or `namespace/name` in the Ingress's namespace), an `Opaque` Secret.
  With `auth-secret-type: auth-file` (the default) its key `auth` holds htpasswd lines
  (`controller/opaque_secrets.py`: the informer keeps that key of Opaque Secrets with
  `--ingress-nginx-compat`). With `auth-map` every key is a user and its value the password hash: the Secret
  is read in full from the API, once per resourceVersion, into an htpasswd file of its own
  (`controller/auth_map_secrets.py`: sorted by user; a key that is not a Secret data key or a value with a
  line break refuses the whole Secret, so nothing can add a line). Either way the Ingress is re-rendered when
  the Secret is created, changed or deleted.
- As ingress-nginx, a Secret that cannot be used (missing, of another type, without `auth`, invalid, not
  readable from the API (auth-map), in another namespace: ingress-nginx's default
  `allow-cross-namespace-resources: false`; or no `auth-secret` at all) denies every location of the
  Ingress: `return 503;`, with a warning naming the reason (a Warning event); the Ingress's other settings
  and every other Ingress are unaffected. Nothing is served unauthenticated.
- `nginx.org/basic-auth-secret` on the same Ingress wins, with a warning naming both.
- The realm passes ingress-nginx's character check and the template's quoting filter.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ingressctl.configs.config import BasicAuth, IngressNginxConfig
from ingressctl.controller.opaque_secrets import OPAQUE
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.ingress_nginx.owners import inherits
from ingressctl.secret_types import SecretReference

_PREFIX = "nginx.ingress.kubernetes.io/"
TYPE = _PREFIX + "auth-type"          # the table's rows (the table imports this module's parsers)
SECRET = _PREFIX + "auth-secret"
SECRET_TYPE = _PREFIX + "auth-secret-type"
REALM = _PREFIX + "auth-realm"
EXTRA = "basic_auth"          # Translation.extras: the BasicAuthSpec
DENIED = "basic_auth_denied"  # a builder's extras: why its locations answer 503
AUTH_FILE, AUTH_MAP = "auth-file", "auth-map"

_ALNUM = r"\-\.\_\~a-zA-Z0-9\/:"
_BASIC_CHARS = re.compile(f"[/{_ALNUM}]*")
_CHARS_WITH_SPACE = re.compile(f"[/{_ALNUM} ]*")
_TYPE_RE = re.compile("basic|digest")
_SECRET_TYPE_RE = re.compile("auth-file|auth-map")

WINS = ("annotation nginx.org/basic-auth-secret wins over nginx.ingress.kubernetes.io/auth-type and "
        "auth-secret; they are ignored")
DENIED_MESSAGE = "ingress-nginx basic auth: {reason}; every location of the Ingress answers 503"


@dataclass(frozen=True)
class BasicAuthSpec:
    secret: str       # the auth-secret value ("" when missing)
    realm: str
    denied: str = ""  # why every location is denied, whatever the Secret
    auth_map: bool = False  # auth-secret-type: auth-map (the reference is the map's own file)


def _invalid(value: str) -> ValueError:
    return ValueError(f"value {value} is invalid")


def auth_type(value: str) -> str:
    if not _TYPE_RE.search(value.replace(" ", "")):
        raise _invalid(value)
    return value


def secret_type(value: str) -> str:
    if not _SECRET_TYPE_RE.search(value.replace(" ", "")):
        raise _invalid(value)
    return value


def secret(value: str) -> str:
    if not _BASIC_CHARS.fullmatch(value.replace(" ", "")):
        raise _invalid(value)
    return value


def realm(value: str) -> str:
    if not _CHARS_WITH_SPACE.fullmatch(value):
        raise _invalid(value)
    return value


def split_secret(value: str, namespace: str) -> tuple[str, str]:
    """(namespace, name) of `name` or `namespace/name` (client-go's SplitMetaNamespaceKey); ValueError."""
    parts = value.split("/")
    if len(parts) == 1:
        return namespace, value
    if len(parts) == 2:
        return parts[0] or namespace, parts[1]
    raise ValueError(f"unexpected key format: {value!r}")


def referenced_secret(annotations: Mapping[str, Any], namespace: str) -> str:
    """The name of the Secret `auth-secret` references in `namespace`, or "" (none, or elsewhere)."""
    value = annotations.get(SECRET)
    if not isinstance(value, str) or not value or TYPE not in annotations:
        return ""
    try:
        ns, name = split_secret(value, namespace)
    except ValueError:
        return ""
    return name if ns == namespace and name else ""


def _layout(value: str) -> str:
    """auth-secret-type as ingress-nginx compares it (each line's spaces trimmed, parser.normalizeString)."""
    return "\n".join(line.strip() for line in value.split("\n"))


def auth_map_secret(annotations: Mapping[str, Any], namespace: str) -> str:
    """The name of the Secret `auth-type: basic` with `auth-secret-type: auth-map` reads in `namespace`, or
    "" (another type, no Secret, or one elsewhere): the builder asks the store for its auth-map file."""
    layout = annotations.get(SECRET_TYPE)
    if annotations.get(TYPE) != "basic" or not isinstance(layout, str) or _layout(layout) != AUTH_MAP:
        return ""
    return referenced_secret(annotations, namespace)


def combine(parsed: dict[str, Any], raw: dict[str, str], out: Any) -> None:
    """The translator's combiner: `out.extras[EXTRA]` = the BasicAuthSpec of `auth-type: basic`."""
    kind = parsed.get(TYPE)
    if kind is None:
        for k in (SECRET, SECRET_TYPE, REALM):
            if k in parsed:
                out.mark(k, Status.IGNORED, "needs auth-type (ingress-nginx ignores it too)")
        return
    if kind != "basic":
        out.refuse(TYPE, raw[TYPE], "digest authentication (NGINX has no digest authentication; "
                                    "ingress-nginx needs a third-party module for it)")
        return
    layout = _layout(parsed.get(SECRET_TYPE, AUTH_FILE))
    denied = ""
    if layout not in (AUTH_FILE, AUTH_MAP):
        denied = "invalid auth-secret-type in annotation, must be 'auth-file' or 'auth-map'"
    elif SECRET not in parsed:
        denied = "error reading secret name from annotation: auth-secret is not set"
    out.extras[EXTRA] = BasicAuthSpec(parsed.get(SECRET, ""), parsed.get(REALM, ""), denied,
                                      auth_map=layout == AUTH_MAP)


def _reference_problem(spec: BasicAuthSpec, namespace: str, refs: Mapping[str, SecretReference]
                       ) -> tuple[str, SecretReference | None]:
    try:
        ns, name = split_secret(spec.secret, namespace)
    except ValueError as e:
        return f"error reading secret name from annotation: {e}", None
    if ns != namespace:
        return "cross namespace usage of secrets is not allowed", None
    key = f"{ns}/{name}"
    ref = refs.get(name)
    if ref is None or not ref.secret_type:
        return f"secret {key} does not exist", None
    if ref.secret_type != OPAQUE:
        return f"secret {key} is of the type '{ref.secret_type}', must be '{OPAQUE}'", None
    if ref.error:
        return (ref.error if spec.auth_map else f"secret {key} is invalid: {ref.error}"), None
    if not ref.path:
        return f"the secret {name} does not contain a key with value auth", None
    return "", ref


def resolve(extras: Mapping[str, Any], namespace: str, refs: Mapping[str, SecretReference],
            warnings: list[str], *, nginx_org: bool) -> tuple[BasicAuth | None, Mapping[str, Any]]:
    """For a builder: (the basic auth, its extras with DENIED when the Secret cannot be used); warnings
    appended. `nginx_org`: the Ingress has `nginx.org/basic-auth-secret` (which wins)."""
    spec: BasicAuthSpec = extras[EXTRA]
    if nginx_org:
        warnings.append(WINS)
        return None, extras
    problem, ref = (spec.denied, None) if spec.denied else _reference_problem(spec, namespace, refs)
    if ref is None:
        warnings.append(DENIED_MESSAGE.format(reason=problem))
        return None, {**extras, DENIED: problem}
    return BasicAuth(realm=spec.realm, user_file=ref.path), extras


Owner = tuple[str, str]


def apply_denied(cfg: IngressNginxConfig, extras: Mapping[Owner, Mapping[str, Any]]) -> IngressNginxConfig:
    """`return 503;` in every location whose Ingress (a minion without basic auth of its own: its master's;
    not for a shared host's member) is denied."""
    master = cfg.ingress
    own = (master.namespace, master.name)
    if not any(DENIED in e for e in extras.values()):
        return cfg
    servers = []
    for server in cfg.servers:
        locations = []
        for loc in server.locations:
            owner = (loc.minion.namespace, loc.minion.name) if loc.minion is not None else own
            mine = extras.get(owner, {})
            denied = DENIED in mine or (EXTRA not in mine and inherits(loc) and DENIED in extras.get(own, {}))
            if denied:
                loc = dataclasses.replace(loc, policy_lines=(*loc.policy_lines, "return 503;"))
            locations.append(loc)
        servers.append(dataclasses.replace(server, locations=tuple(locations)))
    return dataclasses.replace(cfg, servers=tuple(servers))
