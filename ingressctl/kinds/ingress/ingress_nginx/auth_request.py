"""ingress-nginx's external authentication annotations (`auth-url` and its companions): their value syntaxes
and their combination into one `AuthRequest`, which `auth_render.py` turns into NGINX lines.

Guarantees:
- Each parser accepts what ingress-nginx's validator accepts (`authreq/main.go`: `URLWithNginxVariableRegex`
  for `auth-url` and `auth-signin`, `URLIsValidRegex` for `auth-request-redirect` and
  `auth-signin-redirect-param`, the method list, `HeadersVariable` and one header name per item, Go's
  `url.Parse` with a scheme and a host without `..`), narrowed where the value is written into the
  configuration: no whitespace, only `http`/`https`, a port 1-65535, NGINX variables that NGINX knows, and
  none in `auth-url`'s host (resolving a host per request needs a `resolver`, which ingressctl does not
  configure) except the request's own host (`$host`, `$http_host`, `$best_http_host`: ingress-nginx's docs'
  `https://$host/oauth2/auth`), which names this NGINX: the subrequest goes to it over loopback
  (`HttpURL.loopback`), as it went back through the load balancer under ingress-nginx.
- The variables ingress-nginx's template defines and its users write in `auth-url` and `auth-signin`
  (`INGRESS_NGINX_VARIABLES`) become their NGINX equivalents: `$escaped_request_uri` is
  `$ingressctl_escaped_request_uri` (configs.escaped_uri: $request_uri as one URI component, as
  ingress-nginx's), `$best_http_host` `$http_host`, `$pass_access_scheme` `$scheme`.
- As ingress-nginx: without `auth-url` the other rows are ignored (with a warning); an invalid `auth-url`,
  `auth-method`, `auth-response-headers`, `auth-request-redirect` or `auth-always-set-cookie` rejects the
  Ingress (ingress-nginx denied its locations); an invalid `auth-signin` or `auth-signin-redirect-param` is
  ignored with a warning (ingress-nginx logged it and went on without it).
- `auth-signin`'s redirect is ingress-nginx's `buildAuthSignURL`: the URL with `<param>=<original URL>`
  appended (`?` or `&`), unchanged when the URL already carries a non-empty `<param>`.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ingressctl.configs import escaped_uri, parsing
from ingressctl.kinds.ingress.annotation_table import Status

PREFIX = "nginx.ingress.kubernetes.io/"  # the table's (which imports this module)
EXTRA = "auth-request"   # the key of the `AuthRequest` in `Translation.extras`
DEFAULT_REDIRECT_PARAM = "rd"
ORIGINAL_URL = f"$scheme://$http_host{escaped_uri.VARIABLE}"
LOOPBACK_HOSTS = ("$host", "$http_host", "$best_http_host")
INGRESS_NGINX_VARIABLES = {"$escaped_request_uri": escaped_uri.VARIABLE, "$best_http_host": "$http_host",
                           "$pass_access_scheme": "$scheme"}
_INGRESS_NGINX_VARIABLE = re.compile(r"\$(?:escaped_request_uri|best_http_host|pass_access_scheme)"
                                     r"(?![A-Za-z0-9_])")
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE")

# ingress-nginx's character classes (parser/validators.go), spaces removed first as its validators do.
_ALNUM = r"\-._~a-zA-Z0-9/:"
_URL_WITH_VARIABLES = re.compile(f"[{_ALNUM},?&=$]*")
_URL_IS_VALID = re.compile(f"[{_ALNUM},?&=]*")
_HEADERS = re.compile(r"[A-Za-z0-9\-_, ]*")
_HEADER = re.compile(r"[a-zA-Z0-9\-_]+")
_HOST = re.compile(r"[A-Za-z0-9\-._~]{1,253}")


@dataclass(frozen=True)
class HttpURL:
    scheme: str       # http or https
    host: str         # the host name (or IPv4 address), no port; "$host" for loopback
    port: int
    path: str         # path and query, ingress-nginx's variables replaced ("" for none)
    url: str          # the value as written
    loopback: bool = False  # the request's own host: this NGINX, on the server's own port


@dataclass(frozen=True)
class AuthRequest:
    """What the auth annotations of one Ingress ask for (see `auth_render.py`)."""

    url: HttpURL
    method: str = ""                      # "" : the request's own method
    signin: str = ""                      # the redirect of a 401, `rd=` included ("" for none)
    response_headers: tuple[str, ...] = ()
    request_redirect: str = ""            # X-Auth-Request-Redirect ("" : the request URI)
    always_set_cookie: bool = False
    snippet: tuple[str, ...] = ()
    proxy_set_headers: str = ""           # `auth-proxy-set-headers`: the ConfigMap reference, as written
    proxy_headers: tuple[tuple[str, str], ...] = ()  # its validated headers (`header_maps.resolve`)


def _no_space(value: str) -> str:
    if any(c.isspace() for c in value):
        raise ValueError("must not contain whitespace")
    return value


def _variables(value: str) -> None:
    bad = parsing.unknown_variables(value)
    if bad:
        raise ValueError(f"unknown NGINX variable(s): {', '.join(dict.fromkeys(bad))}")


def http_url(value: str, *, host_ends: str = "/?", service: str = "auth service",
             loopback: bool = True, variables: Mapping[str, str] = INGRESS_NGINX_VARIABLES) -> HttpURL:
    """An http(s) URL of ingress-nginx's characters (`URLWithNginxVariableRegex`, no whitespace) whose host,
    up to the first character of `host_ends`, is a literal name or IPv4 address with an optional port 1-65535
    (or, with `loopback`, one of `LOOPBACK_HOSTS`); NGINX variables NGINX knows (ingress-nginx's replaced)
    only after it (`variables`: what ingress-nginx's become). `service` names what the URL points at, in the
    messages. Shared by `auth-url` and `mirror-target` (`mirror.py`: a `$` also ends the host, no loopback,
    and its own variables)."""
    _no_space(value)
    if not _URL_WITH_VARIABLES.fullmatch(value):
        raise ValueError("must be a URL of letters, digits and -._~/:,?&=$ only")
    scheme, sep, rest = value.partition("://")
    if not sep or not scheme:
        raise ValueError("url scheme is empty")
    if scheme.lower() not in ("http", "https"):
        raise ValueError("the scheme must be http or https")
    authority = re.split(f"[{re.escape(host_ends)}]", rest, maxsplit=1)[0]
    path = rest[len(authority):]
    no_resolver = ("NGINX variables in the host need a resolver, which ingressctl does not configure; "
                   f"name the {service}'s host" + (" (or use $host: this NGINX)" if loopback else ""))
    if not authority:
        raise ValueError(no_resolver if path.startswith("$") else "url host is empty")
    host, colon, port_text = authority.rpartition(":") if ":" in authority else (authority, "", "")
    if loopback and host in LOOPBACK_HOSTS:
        path = ingress_nginx_variables(path, variables)
        _variables(path)
        return HttpURL(scheme=scheme.lower(), host="$host", port=443 if scheme.lower() == "https" else 80,
                       path=path, url=value, loopback=True)
    if "$" in host:
        raise ValueError(no_resolver)
    if not _HOST.fullmatch(host) or ".." in host:
        raise ValueError("invalid url host")
    port = 443 if scheme.lower() == "https" else 80
    if colon:
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise ValueError("the port must be between 1 and 65535")
        port = int(port_text)
    path = ingress_nginx_variables(path, variables)
    _variables(path)
    return HttpURL(scheme=scheme.lower(), host=host, port=port, path=path, url=value)


def auth_url(value: str) -> HttpURL:
    """`auth-url`: an http(s) URL of ingress-nginx's characters; NGINX variables in its path and query."""
    return http_url(value)


def ingress_nginx_variables(value: str, table: Mapping[str, str] = INGRESS_NGINX_VARIABLES) -> str:
    """`value` with the variables of ingress-nginx's template replaced (by `table`'s NGINX equivalents)."""
    if "$" not in value:
        return value
    return _INGRESS_NGINX_VARIABLE.sub(lambda m: table[m.group(0)], value)


def method(value: str) -> str:
    """`auth-method`: one of ingress-nginx's methods (spaces removed)."""
    text = value.replace(" ", "")
    if text not in METHODS:
        raise ValueError(f"must be one of {', '.join(METHODS)}")
    return text


def response_headers(value: str) -> tuple[str, ...]:
    """`auth-response-headers`: comma-separated header names."""
    if not _HEADERS.fullmatch(value):
        raise ValueError("must be comma-separated header names (letters, digits, '-' and '_')")
    names = tuple(h.strip() for h in value.split(",") if h.strip())
    if any(not _HEADER.fullmatch(h) for h in names):
        raise ValueError("invalid headers list: each item must be one header name")
    return names


def request_redirect(value: str) -> str:
    """`auth-request-redirect`: a URL of ingress-nginx's `URLIsValidRegex` characters (no variables)."""
    _no_space(value)
    if not _URL_IS_VALID.fullmatch(value):
        raise ValueError("must be a URL of letters, digits and -._~/:,?&= only")
    return value


def signin_problem(value: str) -> str:
    """Why `auth-signin` is invalid ("" when it is valid)."""
    if any(c.isspace() for c in value) or not _URL_WITH_VARIABLES.fullmatch(value):
        return "must be a URL of letters, digits and -._~/:,?&=$ only"
    bad = parsing.unknown_variables(value)
    return f"unknown NGINX variable(s): {', '.join(dict.fromkeys(bad))}" if bad else ""


def redirect_param_problem(value: str) -> str:
    if any(c.isspace() for c in value) or not _URL_IS_VALID.fullmatch(value):
        return "must be letters, digits and -._~/:,?&= only"
    return ""


def signin_url(signin: str, param: str) -> str:
    """ingress-nginx's `buildAuthSignURL` (see the module docstring)."""
    query = urllib.parse.urlsplit(signin).query
    pairs = urllib.parse.parse_qs(query, keep_blank_values=True)
    if not pairs:
        return f"{signin}?{param}={ORIGINAL_URL}"
    if any(pairs.get(param, [""])):
        return signin
    return f"{signin}&{param}={ORIGINAL_URL}"


# --------------------------------------------------------------------------------------------------- combiner

def _key(name: str) -> str:
    return PREFIX + name


_COMPANIONS = (_key("auth-method"), _key("auth-signin"), _key("auth-signin-redirect-param"),
               _key("auth-response-headers"), _key("auth-request-redirect"), _key("auth-always-set-cookie"),
               _key("auth-snippet"), _key("auth-proxy-set-headers"))


def combine(parsed: dict[str, Any], raw: dict[str, str], out: Any) -> None:
    """The translator's combiner (`translate._COMBINERS`): `out.extras[EXTRA]` = the `AuthRequest`."""
    url = parsed.get(_key("auth-url"))
    if url is None:
        for name in _COMPANIONS:
            if name in parsed:
                out.mark(name, Status.IGNORED, "auth-url is not set (ingress-nginx ignores it too)")
        return
    signin = ""
    signin_key, param_key = _key("auth-signin"), _key("auth-signin-redirect-param")
    param = DEFAULT_REDIRECT_PARAM
    if param_key in parsed:
        problem = redirect_param_problem(parsed[param_key])
        if problem:
            out.mark(param_key, Status.IGNORED, f"invalid value (ingress-nginx ignores it too): {problem}")
        elif signin_key not in parsed:
            out.mark(param_key, Status.IGNORED, "auth-signin is not set")
        else:
            param = parsed[param_key]
    if signin_key in parsed:
        value = ingress_nginx_variables(parsed[signin_key])
        problem = signin_problem(value)
        if problem:
            out.mark(signin_key, Status.IGNORED, f"invalid value (ingress-nginx ignores it too): {problem}")
        else:
            signin = signin_url(value, param)
    get: Callable[[str, Any], Any] = lambda name, default: parsed.get(_key(name), default)  # noqa: E731
    out.extras[EXTRA] = AuthRequest(
        url=url, method=get("auth-method", ""), signin=signin,
        response_headers=get("auth-response-headers", ()),
        request_redirect=get("auth-request-redirect", ""),
        always_set_cookie=get("auth-always-set-cookie", False), snippet=get("auth-snippet", ()),
        proxy_set_headers=get("auth-proxy-set-headers", ""))
