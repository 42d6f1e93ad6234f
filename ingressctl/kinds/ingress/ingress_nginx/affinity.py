"""ingress-nginx's session affinity (`affinity: cookie` and the `session-cookie-*` annotations) as NGINX's
`sticky cookie` in the upstreams of the Ingress's own locations.

Guarantees:
- Values as ingress-nginx's parser takes them (`sessionaffinity/main.go`): `affinity` must be `cookie`
  (case-sensitive, spaces trimmed), else nothing is sticky; a `session-cookie-*` value its validator refuses
  falls back to its default (the cookie name to `INGRESSCOOKIE`, the others to unset), and here gets a
  warning naming it. Without a valid `affinity` the other keys are ignored with a warning. Every value
  written passes NGINX's `sticky cookie` parameter syntax (`directive_values.is_sticky_param`), so no input
  reaches the configuration as syntax.
- The cookie: `HttpOnly` always (as ingress-nginx), `expires=` from `session-cookie-max-age` or else
  `session-cookie-expires` (NGINX writes both `Expires` and `Max-Age` from it), `domain=`, `samesite=`,
  `secure`, and `path=`: `session-cookie-path`, else the one path of the Ingress that uses the upstream (a
  Prefix or Exact path NGINX can write), else `/`.
- `check(...)` (settings, once per annotation set): the affinity is dropped with a warning when
  `nginx.org/sticky-cookie-services` is on the same Ingress (it wins) or the running NGINX has no `sticky`.
- `apply_affinity(cfg, values)` sets the cookie on the upstreams the owner's locations proxy to: for a
  regular Ingress every upstream of its file (its canaries' too), for a minion those its locations name.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ingressctl.configs.config import EXACT, IngressNginxConfig, Upstream
from ingressctl.configs.config import PREFIX as PREFIX_PATH
from ingressctl.configs.directive_values import StickyCookie, is_cookie_name, is_sticky_param
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.ingress_nginx.owners import owned
from ingressctl.nginx.capabilities import Capabilities
from ingressctl.validation import parse_go_bool

EXTRA = "affinity"
PREFIX = "nginx.ingress.kubernetes.io/"
AFFINITY = PREFIX + "affinity"
MODE = PREFIX + "affinity-mode"
CANARY_BEHAVIOR = PREFIX + "affinity-canary-behavior"
NAME = PREFIX + "session-cookie-name"
EXPIRES = PREFIX + "session-cookie-expires"
MAX_AGE = PREFIX + "session-cookie-max-age"
PATH = PREFIX + "session-cookie-path"
DOMAIN = PREFIX + "session-cookie-domain"
SAMESITE = PREFIX + "session-cookie-samesite"
CONDITIONAL_SAMESITE_NONE = PREFIX + "session-cookie-conditional-samesite-none"
SECURE = PREFIX + "session-cookie-secure"
CHANGE_ON_FAILURE = PREFIX + "session-cookie-change-on-failure"
KEYS = (AFFINITY, MODE, CANARY_BEHAVIOR, NAME, EXPIRES, MAX_AGE, PATH, DOMAIN, SAMESITE,
        CONDITIONAL_SAMESITE_NONE, SECURE, CHANGE_ON_FAILURE)
DEFAULT_NAME = "INGRESSCOOKIE"
STICKY_COOKIE_SERVICES = "nginx.org/sticky-cookie-services"

_BASIC_CHARS = re.compile(r"[-._~A-Za-z0-9/:]*")      # ingress-nginx's BasicCharsRegex
_URL_CHARS = re.compile(r"[-._~A-Za-z0-9/:,?&=]*")    # ... and its URLIsValidRegex
_SECONDS = re.compile(r"[1-9][0-9]{0,8}")             # what NGINX's `expires=` takes as seconds
_PREFIX_OR_EXACT = (PREFIX_PATH, EXACT)  # location modifiers of Prefix and Exact paths


@dataclass(frozen=True)
class Affinity:
    name: str
    params: tuple[str, ...]  # every parameter but `path=`
    path: str = ""           # session-cookie-path ("" = from the locations)


def _ignore_all(present: list[str], out: Any, reason: str) -> None:
    for key in present:
        out.mark(key, Status.IGNORED, reason)


def _bool(value: str) -> bool | None:
    try:
        return parse_go_bool(value)
    except ValueError:
        return None


def combine(parsed: dict[str, Any], raw: dict[str, str], out: Any) -> None:
    """The translator's combiner: `out.extras[EXTRA]` = the `Affinity` of the annotations."""
    present = [k for k in KEYS if k in parsed]
    if not present:
        return
    if AFFINITY not in parsed:
        _ignore_all(present, out, f"{AFFINITY} is not set")
        return
    if str(parsed[AFFINITY]).strip() != "cookie":
        _ignore_all(present, out, f"{AFFINITY} is not 'cookie' (the only type; ingress-nginx ignores it too)")
        return

    def invalid(key: str, rule: str) -> None:
        out.mark(key, Status.IGNORED, f"invalid value ({rule}; ingress-nginx uses its default instead)")

    def value(key: str, ok: Any, rule: str) -> str:
        text = str(parsed.get(key, ""))
        if key in parsed and not ok(text):
            invalid(key, rule)
            return ""
        return text if key in parsed else ""

    name = value(NAME, lambda s: _BASIC_CHARS.fullmatch(s) and is_cookie_name(s),
                 "a cookie name of letters, digits and -._~") or DEFAULT_NAME
    params: list[str] = []
    expires = value(MAX_AGE, _SECONDS.fullmatch, "a number of seconds above 0")
    if expires and EXPIRES in parsed:
        out.mark(EXPIRES, Status.IGNORED, f"{MAX_AGE} is set and wins (as browsers do)")
    else:
        expires = expires or value(EXPIRES, _SECONDS.fullmatch, "a number of seconds above 0")
    if expires:
        params.append(f"expires={expires}s")
    domain = value(DOMAIN, lambda s: _BASIC_CHARS.fullmatch(s) and is_sticky_param(f"domain={s}"),
                   "a domain of letters, digits, '-' and '.'")
    if domain:
        params.append(f"domain={domain}")
    params.append("httponly")
    samesite = value(SAMESITE, lambda s: s.strip().lower() in ("none", "lax", "strict"),
                     "'None', 'Lax' or 'Strict'").strip().lower()
    if samesite:
        params.append(f"samesite={samesite}")
    secure = _bool(str(parsed.get(SECURE, "false")))
    if secure is None:
        invalid(SECURE, "a bool")
    elif secure:
        params.append("secure")
    path = value(PATH, lambda s: _URL_CHARS.fullmatch(s) and is_sticky_param(f"path={s}"),
                 "a path starting with '/' of letters, digits and -._~/:,&=")
    _approximations(parsed, samesite, out)
    out.extras[EXTRA] = Affinity(name, tuple(params), path)


def _approximations(parsed: dict[str, Any], samesite: str, out: Any) -> None:
    """The statuses of the keys NGINX's `sticky` has no exact form of, for their values."""
    choices = {MODE: ("balanced", "persistent"), CANARY_BEHAVIOR: ("sticky", "legacy")}
    served = {MODE: "persistent", CANARY_BEHAVIOR: "legacy"}
    approximate = {
        MODE: "NGINX's sticky cookie is persistent: a bound client stays on its endpoint when the Service "
              "scales up",
        CANARY_BEHAVIOR: "the canary is chosen per request (header, cookie, weight); only the endpoint "
                         "within the chosen upstream is sticky"}
    for key, options in choices.items():
        if key not in parsed:
            continue
        text = str(parsed[key]).strip()
        if text not in options:
            out.mark(key, Status.IGNORED, f"invalid value (must be '{options[0]}' or '{options[1]}'; "
                                          "ingress-nginx uses its default instead)")
        elif text == served[key]:
            out.mark(key, Status.SERVED, "")
        else:
            out.mark(key, Status.APPROXIMATED, approximate[key])
    for key, when, reason in (
            (CONDITIONAL_SAMESITE_NONE, True, "SameSite=None is sent to every browser"),
            (CHANGE_ON_FAILURE, False, "NGINX always binds a client whose endpoint failed to the endpoint "
                                       "that answered")):
        if key not in parsed:
            continue
        flag = _bool(str(parsed[key]))
        if flag is None:
            out.mark(key, Status.IGNORED, "invalid value (a bool; ingress-nginx uses its default instead)")
        elif flag is when and (key != CONDITIONAL_SAMESITE_NONE or samesite == "none"):
            out.mark(key, Status.APPROXIMATED, reason)
        else:
            out.mark(key, Status.SERVED, "")


def check(extras: Mapping[str, Any], sticky_cookies: tuple[StickyCookie, ...], caps: Capabilities
          ) -> tuple[Mapping[str, Any], list[str]]:
    """The extras without the affinity where it cannot apply, and the warning saying why."""
    if EXTRA not in extras:
        return extras, []
    if sticky_cookies:
        warning = (f"annotation {STICKY_COOKIE_SERVICES} wins over {AFFINITY} (both set the upstreams' "
                   f"sticky cookie); {AFFINITY} is ignored")
    else:
        warning = caps.not_applied(f"annotation {AFFINITY}", "sticky_cookie")
    if not warning:
        return extras, []
    return {k: e for k, e in extras.items() if k != EXTRA}, [warning]


def _cookie_path(paths: set[tuple[str, str]]) -> str:
    """The one Prefix or Exact path of the locations (a Prefix path's `/p/` and `= /p` are one), else `/`."""
    names = {path.rstrip("/") or "/" if modifier in _PREFIX_OR_EXACT else "" for modifier, path in paths}
    if len(names) == 1:
        (name,) = names
        if name and is_sticky_param(f"path={name}"):
            return name
    return "/"


def apply_affinity(cfg: IngressNginxConfig, values: Mapping[tuple[str, str], Affinity]) -> IngressNginxConfig:
    """`values`: (namespace, name) of the Ingress (regular or master, and minions) -> its affinity."""
    if not values:
        return cfg
    master = cfg.ingress
    fallback = values.get((master.namespace, master.name))
    mergeable = any(loc.minion is not None for s in cfg.servers for loc in s.locations)
    chosen: dict[str, tuple[Affinity, set[tuple[str, str]]]] = {}
    for server in cfg.servers:
        for loc in server.locations:
            found = owned(values, loc, master)
            if found is not None and loc.upstream:
                chosen.setdefault(loc.upstream, (found[1], set()))[1].add((loc.modifier, loc.path))
    if not mergeable and fallback is not None:  # its canaries' upstreams too
        for u in cfg.upstreams:
            chosen.setdefault(u.name, (fallback, set()))
    upstreams: list[Upstream] = []
    for u in cfg.upstreams:
        hit = chosen.get(u.name)
        if hit is not None and u.sticky is None:
            own, paths = hit
            params = (*own.params, f"path={own.path or _cookie_path(paths)}")
            u = dataclasses.replace(u, sticky=StickyCookie("", own.name, params))
        upstreams.append(u)
    return dataclasses.replace(cfg, upstreams=tuple(upstreams))
