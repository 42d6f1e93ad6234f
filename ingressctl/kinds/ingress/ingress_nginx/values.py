"""The value syntaxes of ingress-nginx's annotations, as its validators accept them, turned into the values
ingressctl's settings hold.

Guarantees:
- Each parser accepts what ingress-nginx's validator for that annotation accepts (`parser/validators.go`:
  `ValidateInt`, `SizeRegex`, `ValidateOptions`, `ValidateCIDRs`, Go's `strconv.ParseBool`), narrowed where
  ingress-nginx would let NGINX refuse the value (a negative timeout) or where the value is written into the
  configuration (URLs and host names: no whitespace, quotes, backslashes or braces, known NGINX variables
  only); everything it returns is safe for the template's quoting filters.
- A parser raises `ValueError` with a detail that does not repeat the value.
- Sizes: ingress-nginx's `b` suffix is dropped (NGINX has none); buffer sizes in `g` become `m` (NGINX's
  buffer directives take no `g`), body sizes keep it.
"""

from __future__ import annotations

import ipaddress
import re

from ingressctl.configs import directive_values, parsing
from ingressctl.validation import parse_go_bool

MAX_SECONDS = 2147483  # NGINX keeps times in milliseconds in a 32-bit int
_GO_INT = re.compile(r"[+-]?[0-9]{1,18}")
_SIZE = re.compile(r"([0-9]{1,15})([bBkKmMgG]?)")
_URL = re.compile(r"https?://[A-Za-z0-9._~:/?#\[\]@!&'()*+,;=%$-]{1,2048}", re.IGNORECASE)
_VHOST = re.compile(r"(?:[A-Za-z0-9._~:-]|\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}){1,253}")
_HASH_KEY = re.compile(r"[A-Za-z0-9_${}-]{1,512}")  # ingress-nginx's NGINXVariable, not empty
_TARGET = re.compile(r"/?[-._~A-Za-z0-9/:$]{0,2047}")  # ingress-nginx's RegexPathWithCapture
_CAPTURE = re.compile(r"\$[0-9]+")
BACKEND_PROTOCOLS = ("HTTP", "HTTPS", "AUTO_HTTP", "GRPC", "GRPCS", "AJP", "FCGI")


def integer(value: str, minimum: int, maximum: int) -> int:
    """Go's `strconv.Atoi` (ingress-nginx's `ValidateInt`), within [minimum, maximum]."""
    if not _GO_INT.fullmatch(value):
        raise ValueError("must be an integer")
    n = int(value)
    if not minimum <= n <= maximum:
        raise ValueError(f"must be between {minimum} and {maximum}")
    return n


def seconds(value: str) -> str:
    """An integer number of seconds (ingress-nginx's timeouts) as an NGINX time."""
    try:
        return f"{integer(value, 0, MAX_SECONDS)}s"
    except ValueError:
        raise ValueError(f"must be an integer number of seconds between 0 and {MAX_SECONDS}") from None


def _size(value: str) -> tuple[int, str]:
    m = _SIZE.fullmatch(value.replace(" ", ""))  # ingress-nginx removes spaces before matching
    if m is None:
        raise ValueError("must be a size: digits with an optional b, k, m or g suffix")
    return int(m.group(1)), m.group(2).lower()


def body_size(value: str) -> str:
    """`proxy-body-size`: `client_max_body_size` (`0` = unlimited)."""
    n, unit = _size(value)
    return parsing.parse_offset(f"{n}{'' if unit == 'b' else unit}")


def buffer_size(value: str) -> str:
    """A buffer size (`proxy-buffer-size`, ...): NGINX's size syntax, `g` as `m`."""
    n, unit = _size(value)
    if unit == "g":
        n, unit = n * 1024, "m"
    return parsing.parse_size(f"{n}{'' if unit == 'b' else unit}")


def on_off(value: str) -> bool:
    """`on` or `off` (ingress-nginx's `ValidateOptions([on off], caseSensitive, trimSpace)`)."""
    text = value.strip()
    if text not in ("on", "off"):
        raise ValueError("must be 'on' or 'off'")
    return text == "on"


def on_off_text(value: str) -> str:
    return "on" if on_off(value) else "off"


def go_bool(value: str) -> bool:
    """Go's `strconv.ParseBool` (`true`, `false`, `1`, `0`, `t`, `f`, ...)."""
    b = parse_go_bool(value)
    if b is None:
        raise ValueError("must be a boolean")
    return b


def cidrs(value: str) -> tuple[str, ...]:
    """A comma-separated list of IP addresses and CIDRs (ingress-nginx's `ParseCIDRs`), as networks."""
    result: list[str] = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            net = ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or CIDR") from None
        text = str(net.network_address) if net.num_addresses == 1 and "/" not in item else str(net)
        result.append(text)
    if not result:
        raise ValueError("must be a comma-separated list of IP addresses or CIDRs")
    return tuple(dict.fromkeys(result))


def redirect_url(value: str) -> str:
    """A redirect target: an `http://` or `https://` URL (ingress-nginx's `isValidURL`) without whitespace,
    quotes, backslashes or braces; `$variables` NGINX knows are kept (`https://example.com$request_uri`)."""
    if not _URL.fullmatch(value):
        raise ValueError("must be an http:// or https:// URL without whitespace, quotes, backslashes or "
                         "braces")
    bad = parsing.unknown_variables(value)
    if bad:
        raise ValueError(f"unknown NGINX variable(s): {', '.join(dict.fromkeys(bad))}")
    return value


def upstream_vhost(value: str) -> str:
    """`upstream-vhost`: the `Host` sent upstream, a host name (optionally with a port) and known NGINX
    variables."""
    if not _VHOST.fullmatch(value):
        raise ValueError("must be a host name, optionally with a port and NGINX variables")
    bad = parsing.unknown_variables(value)
    if bad:
        raise ValueError(f"unknown NGINX variable(s): {', '.join(dict.fromkeys(bad))}")
    return value


def backend_protocol(value: str) -> str:
    """`backend-protocol`, upper-cased and trimmed as ingress-nginx does."""
    text = value.strip().upper()
    if text not in BACKEND_PROTOCOLS:
        raise ValueError(f"must be one of {', '.join(BACKEND_PROTOCOLS)}")
    return text


def hash_by(value: str) -> str:
    """`upstream-hash-by` as the load-balancing method `hash <key> consistent` (ingress-nginx's consistent
    hashing, ketama as NGINX's `consistent`)."""
    if not _HASH_KEY.fullmatch(value) or "$" not in value:
        raise ValueError("must be NGINX variables with optional letters, digits, '-' and '_' "
                         "(e.g. $request_uri)")
    return parsing.parse_lb_method(f"hash {value} consistent")


def status_codes(value: str) -> tuple[int, ...]:
    """`custom-http-errors`: comma-separated status codes (ingress-nginx reads integers only)."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items or any(not re.fullmatch(r"[0-9]{3}", v) for v in items):
        raise ValueError("must be a comma-separated list of HTTP status codes")
    return directive_values.parse_custom_http_errors(",".join(items))


def load_balance(value: str) -> str:
    """`load-balance`: `round_robin` (NGINX's default method, "") or `ewma` (as `random two least_conn`)."""
    methods = {"round_robin": "", "ewma": "random two least_conn"}
    text = value.strip()
    if text not in methods:
        raise ValueError("must be 'round_robin' or 'ewma'")
    return methods[text]


def redirect_code(value: str) -> int:
    """`permanent-redirect-code` / `temporal-redirect-code`: an integer (its range is the caller's)."""
    return integer(value, -(2**31), 2**31 - 1)


def service_name(value: str) -> str:
    """A Service in the Ingress's namespace (a DNS-1035 label, ingress-nginx's `ValidateServiceName`)."""
    if not re.fullmatch(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", value):
        raise ValueError("must be a Service name (a DNS-1035 label)")
    return value


def text(value: str) -> str:
    """A value that is validated only for what ingressctl does with it (nothing: an ignored row)."""
    return value


def rewrite_target(value: str) -> str:
    """`rewrite-target`: ingress-nginx's `RegexPathWithCapture` (letters, digits, `-._~/:` and `$`, a leading
    `/` optional), with every `$` a capture group (`$1`...) or a variable NGINX knows."""
    if not _TARGET.fullmatch(value):
        raise ValueError("must be a URI of letters, digits, '-', '.', '_', '~', '/', ':' and '$' (capture "
                         "groups such as $1)")
    bad = parsing.unknown_variables(_CAPTURE.sub("", value))
    if bad:
        raise ValueError(f"unknown NGINX variable(s): {', '.join(dict.fromkeys(bad))}")
    return value
