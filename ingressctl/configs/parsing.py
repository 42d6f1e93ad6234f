"""Strict parsers for ConfigMap keys and annotations (NIC's `parsing_helpers.go`).

Each parser returns a normalised value or raises `ValueError` whose message is a detail that does not repeat
the value (callers add the key and the value: `annotation nginx.org/x: invalid value "v": <detail>`).

Guarantees: a value that a parser accepts is safe to write into NGINX configuration AND is one that NGINX
accepts for the directive it is meant for (time units in NGINX's order, `k`/`m` sizes where NGINX takes no
`g`, zones large enough, rates and status codes in range). None of the parsers accepts whitespace other than
single spaces between known words, quotes, `;`, `{`, `}`, `#` or control characters; `$` only where the value
is an NGINX variable expression (`hash` keys, `limit_req_zone` keys).
"""

from __future__ import annotations

import ipaddress
import re
import ssl

_TIME = re.compile(r"\d{1,9}|(?=\d)(\d{1,9}y)?\s*(\d{1,9}M)?\s*(\d{1,9}w)?\s*(\d{1,9}d)?\s*(\d{1,9}h)?\s*"
                   r"(\d{1,9}m)?\s*(\d{1,9}s)?\s*(\d{1,9}ms)?")
_SIZE = re.compile(r"([0-9]{1,15})([kKmMgG]?)")
_INT = re.compile(r"[+-]?[0-9]{1,18}")
_STATUS = re.compile(r"[1-5][0-9]{2}")
_VARIABLE = r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})"
# A variable expression: NGINX variables and a few literal characters, e.g. `$binary_remote_addr`,
# `${host}$uri`, `$remote_addr:$uri`.
_VARIABLE_EXPR = re.compile(rf"(?:{_VARIABLE}|[A-Za-z0-9_.:/@-])*{_VARIABLE}"
                            rf"(?:{_VARIABLE}|[A-Za-z0-9_.:/@-])*")
_VARIABLE_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
# NGINX's variables (core, and the modules of a standard build) that a key or a log format may use. NGINX
# refuses a configuration naming an unknown variable.
KNOWN_VARIABLES = frozenset("""
args binary_remote_addr body_bytes_sent bytes_sent connection connection_requests connection_time
content_length content_type document_root document_uri host hostname https is_args limit_rate msec
nginx_version pid pipe proxy_protocol_addr proxy_protocol_port proxy_protocol_server_addr
proxy_protocol_server_port query_string realpath_root remote_addr remote_port remote_user request
request_body request_body_file request_completion request_filename request_id request_length
request_method request_time request_uri scheme server_addr server_name server_port server_protocol
status tcpinfo_rtt tcpinfo_rttvar tcpinfo_snd_cwnd tcpinfo_rcv_space time_iso8601 time_local uri
upstream_addr upstream_bytes_received upstream_bytes_sent upstream_cache_status upstream_connect_time
upstream_header_time upstream_queue_time upstream_response_length upstream_response_time upstream_status
proxy_host proxy_port proxy_add_x_forwarded_for realip_remote_addr realip_remote_port gzip_ratio
limit_req_status limit_conn_status http2 ssl_cipher ssl_ciphers ssl_protocol ssl_server_name
ssl_session_id ssl_session_reused ssl_early_data ssl_curves ssl_client_verify ssl_client_s_dn
ssl_client_i_dn ssl_client_serial ssl_client_fingerprint resource_type resource_name resource_namespace
service ingressctl_escaped_request_uri
""".split())  # noqa: SIM905
_VARIABLE_PREFIXES = ("arg_", "cookie_", "http_", "sent_http_", "sent_trailer_", "upstream_http_",
                      "upstream_cookie_", "upstream_trailer_")
_HEADER_NAME = re.compile(r"[-A-Za-z0-9]+")
_RATE = re.compile(r"([0-9]{1,9})r/([sm])")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SSL_CIPHERS = re.compile(r"[A-Za-z0-9!:+@._=-]{1,2048}")
_SYSLOG_PARAM = re.compile(r"syslog:[A-Za-z0-9_.:,=\[\]/-]{1,1024}")
_LOG_FORMAT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CPU_MASK = re.compile(r"[01]{1,1024}")
_URL = re.compile(r"https?://[A-Za-z0-9._~:/?#\[\]@!&'()*+,;=%-]{1,2048}")

LB_METHODS = frozenset({
    "round_robin", "least_conn", "ip_hash", "random", "random two", "random two least_conn",
})
LOG_LEVELS = ("debug", "info", "notice", "warn", "error", "crit", "alert", "emerg")
LIMIT_REQ_LOG_LEVELS = ("info", "notice", "warn", "error")
SSL_PROTOCOLS = frozenset({"SSLv2", "SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"})
LOG_FORMAT_ESCAPING = ("default", "json", "none")
# The smallest shared memory zone NGINX accepts is 8 pages; 32k covers 4k pages.
MIN_ZONE_SIZE = 32 * 1024
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_MAX_BYTES = 2**62


def parse_bool(value: str) -> bool:
    """Go's strconv.ParseBool: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError("must be a boolean")


def parse_int(value: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    text = value.strip()
    if not _INT.fullmatch(text):
        raise ValueError("must be an integer")
    number = int(text)
    if minimum is not None and number < minimum:
        raise ValueError(f"must be at least {minimum}" if maximum is None else
                         f"must be between {minimum} and {maximum}")
    if maximum is not None and number > maximum:
        raise ValueError(f"must be at most {maximum}" if minimum is None else
                         f"must be between {minimum} and {maximum}")
    return number


def parse_time(value: str) -> str:
    """An NGINX time such as `60s`, `1m30s`, `500ms`, `1h 30m` (spaces dropped) or `10` (seconds).

    Units must come in NGINX's order (y M w d h m s ms), each at most once, as NGINX requires."""
    text = value.strip()
    if not text or len(text) > 64 or not _TIME.fullmatch(text):
        raise ValueError("must be a time: a number with optional units in the order y, M, w, d, h, m, s, ms "
                         "(e.g. 60s, 1m30s, 500ms)")
    return "".join(text.split())


def _bytes(value: str, units: str) -> tuple[str, int]:
    text = value.strip()
    m = _SIZE.fullmatch(text)
    if m is None or (m.group(2) and m.group(2).lower() not in units):
        raise ValueError("")
    number = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if number > _MAX_BYTES:
        raise ValueError("")
    return text, number


def parse_size(value: str) -> str:
    """An NGINX size (`ngx_parse_size`): a number with an optional `k` or `m`, such as `512k`, `1m`, `0`."""
    try:
        return _bytes(value, "km")[0]
    except ValueError:
        raise ValueError("must be a size: a number with an optional unit k or m (e.g. 512k, 1m)") from None


def size_bytes(value: str) -> int:
    """The number of bytes of a size or offset accepted by `parse_size` / `parse_offset`."""
    return _bytes(value, "kmg")[1]


def parse_offset(value: str) -> str:
    """An NGINX offset (`ngx_parse_offset`): a number with an optional `k`, `m` or `g`."""
    try:
        return _bytes(value, "kmg")[0]
    except ValueError:
        raise ValueError("must be an offset: a number with an optional unit k, m or g (e.g. 1m, 2g)") \
            from None


def parse_zone_size(value: str, *, allow_zero: bool = False) -> str:
    """A shared memory zone size: at least 32k (NGINX refuses smaller zones); `0` = no zone if allowed."""
    text = parse_size(value)
    n = size_bytes(text)
    if n == 0 and allow_zero:
        return text
    if n < MIN_ZONE_SIZE:
        raise ValueError("must be a size of at least 32k" + (" (or 0 for no zone)" if allow_zero else ""))
    return text


def parse_status(value: str) -> str:
    text = value.strip()
    if not _STATUS.fullmatch(text):
        raise ValueError("must be a status code between 100 and 599")
    return text


def parse_default_server_return(value: str) -> str:
    """`<code>` or `<code> <text or URL>` for the default server's `return` (e.g. `404`,
    `302 https://example.com/`). The text may not contain `$`, quotes or control characters."""
    text = value.strip()
    code, _, rest = text.partition(" ")
    parse_status(code)
    rest = rest.strip()
    if not rest:
        return code
    if 300 <= int(code) < 400 and code != "304":
        if not _URL.fullmatch(rest):
            raise ValueError("a redirect must be '<code> <http(s) URL>'")
        return f"{code} {rest}"
    if re.search(r"[\x00-\x1f\x7f$\"\\]", rest) or len(rest) > 1024:
        raise ValueError("the text must not contain '$', quotes, backslashes or control characters")
    return f"{code} {rest}"


def parse_lb_method(value: str) -> str:
    """NIC's OSS load-balancing methods; `round_robin` becomes "" (NGINX's default).

    `hash <key> [consistent]`: the key is an NGINX variable expression (e.g. `$request_uri`)."""
    text = " ".join(value.split())
    if text in LB_METHODS:
        return "" if text == "round_robin" else text
    if text.startswith("hash "):
        parts = text.split(" ")
        consistent = len(parts) == 2 or parts[2] == "consistent"
        if len(parts) in (2, 3) and _VARIABLE_EXPR.fullmatch(parts[1]) and consistent:
            _known_variables(parts[1])
            return text
    raise ValueError(f"invalid load balancing method: use one of {', '.join(sorted(LB_METHODS))}, "
                     "or 'hash <$variable> [consistent]'")


def parse_server_tokens(value: str) -> str:
    return "on" if parse_bool(value) else "off"


def parse_worker_processes(value: str) -> str:
    text = value.strip()
    if text == "auto":
        return text
    return str(parse_int(text, minimum=1, maximum=4096))


def parse_worker_cpu_affinity(value: str) -> str:
    """`auto`, `auto <mask>` or one bit mask per worker (e.g. `0101 1010`)."""
    words = value.split()
    masks = words[1:] if words[:1] == ["auto"] else words
    if not words or (words[0] == "auto" and len(words) > 2) or not all(_CPU_MASK.fullmatch(w) for w in masks):
        raise ValueError("must be 'auto', 'auto <mask>' or CPU bit masks such as '0101 1010'")
    return " ".join(words)


def parse_log_level(value: str) -> str:
    text = value.strip()
    if text not in LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
    return text


def parse_limit_req_log_level(value: str) -> str:
    if value not in LIMIT_REQ_LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(LIMIT_REQ_LOG_LEVELS)}")
    return value


def parse_ssl_protocols(value: str) -> str:
    words = value.split()
    if not words or any(w not in SSL_PROTOCOLS for w in words):
        raise ValueError(f"must be a list of {', '.join(sorted(SSL_PROTOCOLS))}")
    return " ".join(words)


def parse_ssl_ciphers(value: str) -> str:
    """An OpenSSL cipher list (newlines trimmed, as NIC does)."""
    text = "".join(line.strip() for line in value.splitlines())
    if not _SSL_CIPHERS.fullmatch(text):
        raise ValueError("must be an OpenSSL cipher list (letters, digits and !:+@._=-)")
    try:  # the OpenSSL that NGINX links too: a list that selects no cipher makes NGINX refuse the config
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).set_ciphers(text)
    except ssl.SSLError:
        raise ValueError("must be an OpenSSL cipher list that selects at least one cipher") from None
    return text


def parse_lines(value: str) -> tuple[str, ...]:
    """Newline-separated lines with surrounding whitespace removed and empty lines dropped."""
    return tuple(line.strip() for line in value.splitlines() if line.strip())


def parse_comma_list(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def parse_rate(value: str) -> str:
    """A request rate for `limit_req_zone`: `<n>r/s` or `<n>r/m`, n >= 1."""
    m = _RATE.fullmatch(value.strip())
    if m is None or int(m.group(1)) < 1:
        raise ValueError("must be a rate such as 10r/s or 30r/m")
    return f"{int(m.group(1))}r/{m.group(2)}"


def scale_rate(rate: str, replicas: int) -> str:
    """`rate` divided among `replicas` controllers (`nginx.org/limit-req-scale`): r/s below 1 becomes r/m,
    and the result is never below 1."""
    m = _RATE.fullmatch(rate)
    if m is None or replicas <= 1:
        return rate
    number, unit = int(m.group(1)), m.group(2)
    scaled = number / replicas
    if unit == "s" and scaled < 1:
        scaled, unit = scaled * 60, "m"
    return f"{max(1, int(scaled))}r/{unit}"


def unknown_variables(text: str) -> list[str]:
    """The `$variables` in `text` that NGINX does not know (see KNOWN_VARIABLES), and "$" for a `$` that
    starts no variable name."""
    bad = []
    for i, ch in enumerate(text):
        if ch != "$":
            continue
        m = _VARIABLE_REF.match(text, i)
        if m is None:
            bad.append("$")
            continue
        name = (m.group(1) or m.group(2)).lower()
        if name not in KNOWN_VARIABLES and not (name.startswith(_VARIABLE_PREFIXES) and
                                                 len(name) > len(name.split("_")[0]) + 1):
            bad.append("$" + name)
    return bad


def _known_variables(text: str) -> None:
    bad = unknown_variables(text)
    if bad:
        raise ValueError(f"unknown NGINX variable(s): {', '.join(dict.fromkeys(bad))}")


def parse_variable_expression(value: str) -> str:
    """An NGINX variable expression such as `${binary_remote_addr}` or `$host$uri` (for keys)."""
    if len(value) > 512 or not _VARIABLE_EXPR.fullmatch(value):
        raise ValueError("must be NGINX variables (e.g. ${binary_remote_addr}) with optional letters, digits "
                         "and ._:/@-")
    _known_variables(value)
    return value


_VARIABLES_ONLY = re.compile(rf"(?:{_VARIABLE})+")


def parse_limit_req_key(value: str) -> str:
    """A `limit_req_zone` key: NGINX variable references only (`${binary_remote_addr}`, `$host$uri`), as NIC
    5.5 requires."""
    if len(value) > 512 or not _VARIABLES_ONLY.fullmatch(value):
        raise ValueError("must be NGINX variables only, such as ${binary_remote_addr} or "
                         "$binary_remote_addr$uri (no other characters)")
    _known_variables(value)
    return value


def parse_log_format(value: str) -> tuple[str, ...]:
    """The lines of a log format: each becomes one quoted argument; its `$variables` must be known."""
    lines = parse_lines(value)
    for line in lines:
        _known_variables(line)
    return lines


def parse_header_name(value: str) -> str:
    if len(value) > 256 or not _HEADER_NAME.fullmatch(value):
        raise ValueError("a valid HTTP header must consist of alphanumeric characters or '-'")
    return value


def parse_header_names(value: str) -> tuple[str, ...]:
    """A comma-separated list of header names (entries trimmed, empty entries dropped)."""
    names = tuple(item.strip() for item in value.split(","))
    for n in names:
        parse_header_name(n)
    return tuple(dict.fromkeys(names))


def parse_proxy_set_headers(value: str) -> tuple[tuple[str, str | None], ...]:
    """`Name[: value], ...` -> ((name, value or None), ...). A bare name passes the client's header of that
    name; a value is a constant (no `$`, no control characters)."""
    result: dict[str, str | None] = {}
    for entry in value.split(","):
        entry = entry.strip()
        if ":" in entry:
            name, header_value = entry.split(":", 1)
            name, header_value = name.strip(), header_value.strip()
            if "$" in header_value:
                raise ValueError("invalid character in value: $")
            if re.search(r"[\x00-\x1f\x7f]", header_value):
                raise ValueError("invalid character in value: a control character")
        else:
            name, header_value = entry, None
            if " " in name:
                raise ValueError("invalid header syntax - spaces are not allowed in header")
        if not name:
            raise ValueError(f"empty header name: {entry!r}")
        parse_header_name(name)
        result[name] = header_value
    return tuple(result.items())


def parse_port_list(value: str) -> tuple[int, ...]:
    ports = []
    for part in value.split(","):
        if not re.fullmatch(r"[0-9]{1,5}", part) or not 1 <= int(part) <= 65535:
            raise ValueError("must be a comma-separated list of port numbers")
        ports.append(int(part))
    return tuple(dict.fromkeys(ports))


def parse_cidr_list(value: str) -> tuple[str, ...]:
    """`set_real_ip_from` sources: IP addresses, CIDRs or `unix:`."""
    result = []
    for item in parse_comma_list(value):
        if item != "unix:":
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError("must be a comma-separated list of IP addresses, CIDRs or 'unix:'") from None
        result.append(item)
    if not result:
        raise ValueError("must be a comma-separated list of IP addresses, CIDRs or 'unix:'")
    return tuple(result)


def parse_real_ip_header(value: str) -> str:
    text = value.strip()
    if text == "proxy_protocol":
        return text
    return parse_header_name(text)


def parse_access_log(value: str) -> str:
    """NIC accepts only syslog destinations: `syslog:server=<addr>[,<param>=<v>...] [<format name>]`."""
    words = value.split()
    if not 1 <= len(words) <= 2 or not _SYSLOG_PARAM.fullmatch(words[0]) or \
            (len(words) == 2 and not _LOG_FORMAT_NAME.fullmatch(words[1])):
        raise ValueError("must be a syslog destination such as 'syslog:server=localhost:514 main'")
    return " ".join(words)


def parse_log_format_escaping(value: str) -> str:
    text = value.strip()
    if text not in LOG_FORMAT_ESCAPING:
        raise ValueError(f"must be one of {', '.join(LOG_FORMAT_ESCAPING)}")
    return text


def parse_secret_name(value: str) -> str:
    if len(value) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(value):
        raise ValueError("must be a lowercase RFC 1123 subdomain (a Secret name)")
    return value


_ESCAPED_VALUE = re.compile(r'([^"$\\\x00-\x1f\x7f]|\\[^$\x00-\x1f\x7f]){0,1024}')


def parse_realm(value: str) -> str:
    """Text that NGINX puts inside a quoted string of a response header (a basic-auth realm): every `"`
    escaped, no `$`, no control characters, no trailing lone backslash (NIC's annotation-value rule)."""
    if not _ESCAPED_VALUE.fullmatch(value):
        raise ValueError("a valid annotation value must have all '\"' escaped and must not contain any '$', "
                         "control characters, or end with an unescaped '\\'")
    return value


_DHPARAM = re.compile(r"-----BEGIN (X9\.42 )?DH PARAMETERS-----\s+[A-Za-z0-9+/=\s]{16,16384}"
                      r"-----END (X9\.42 )?DH PARAMETERS-----")


def parse_dhparam(value: str) -> str:
    """The content of a Diffie-Hellman parameters PEM file (PKCS#3 or X9.42)."""
    text = value.strip()
    if not _DHPARAM.fullmatch(text):
        raise ValueError("must be a PEM block of DH PARAMETERS")
    return text + "\n"


def buffers_problem(proxy_buffers: str, proxy_buffer_size: str, proxy_max_temp_file_size: str,
                    page_size: int = 4096, *, proxy_busy_buffers_size: str = "") -> str:
    """Why NGINX would refuse this combination of proxy buffer settings ("" if it accepts it).

    NGINX's defaults: `proxy_buffers 8 <page>`, `proxy_buffer_size <page>`, `proxy_busy_buffers_size` twice
    the larger of the buffer size and one buffer. The busy size must be at least that larger size and at most
    all buffers but one."""
    num, one = 8, page_size
    if proxy_buffers:
        n, s = proxy_buffers.split()
        num, one = int(n), size_bytes(s)
        if num < 2:
            return "there must be at least 2 proxy buffers"
        if one == 0:
            return "the proxy buffer size must not be 0"
    size = max(size_bytes(proxy_buffer_size) if proxy_buffer_size else page_size, one)
    if proxy_busy_buffers_size:
        busy = size_bytes(proxy_busy_buffers_size)
        if busy < size:
            return ("proxy-busy-buffers-size must be equal to or greater than the larger of "
                    "proxy-buffer-size and one proxy buffer")
        if busy > (num - 1) * one:
            return "proxy-busy-buffers-size must be less than the size of all proxy buffers minus one buffer"
    elif 2 * size > (num - 1) * one:
        return ("twice the larger of proxy-buffer-size and one proxy buffer must be less than the size of "
                "all proxy buffers minus one buffer")
    if proxy_max_temp_file_size:
        temp = size_bytes(proxy_max_temp_file_size)
        if temp != 0 and temp < size:
            return ("proxy-max-temp-file-size must be 0 or at least the larger of proxy-buffer-size and one "
                    "proxy buffer")
    return ""


def _size_text(n: int) -> str:
    return f"{n // 1024}k" if n % 1024 == 0 else str(n)


def balance_proxy_buffers(proxy_buffers: str, proxy_buffer_size: str, proxy_busy_buffers_size: str,
                          proxy_max_temp_file_size: str, page_size: int = 4096) -> tuple[str, str, str, str]:
    """`-enable-directive-autoadjust`: the smallest increases that make NGINX accept the buffer settings
    (what `buffers_problem` checks). At least 2 buffers; the busy size at least the larger of the buffer size
    and one buffer; enough buffers that all but one hold the busy size; a non-zero temp file size at least
    that larger size. Returns (proxy_buffers, proxy_buffer_size, proxy_busy_buffers_size,
    proxy_max_temp_file_size); a value that needs no change comes back as it was."""
    num, one = 8, page_size
    if proxy_buffers:
        n, s = proxy_buffers.split()
        num, one = int(n), size_bytes(s) or page_size
    size = max(size_bytes(proxy_buffer_size) if proxy_buffer_size else page_size, one)
    busy = size_bytes(proxy_busy_buffers_size) if proxy_busy_buffers_size else 2 * size
    if proxy_busy_buffers_size and busy < size:
        busy = size
        proxy_busy_buffers_size = _size_text(busy)
    wanted = max(2, num, -(-busy // one) + 1)
    if wanted != num or (proxy_buffers and size_bytes(proxy_buffers.split()[1]) == 0):
        proxy_buffers = f"{wanted} {_size_text(one)}"
    if proxy_max_temp_file_size:
        temp = size_bytes(proxy_max_temp_file_size)
        if temp != 0 and temp < size:
            proxy_max_temp_file_size = _size_text(size)
    return proxy_buffers, proxy_buffer_size, proxy_busy_buffers_size, proxy_max_temp_file_size


def parse_proxy_buffers(value: str) -> str:
    """`proxy_buffers`: `<number> <size>`, e.g. `8 4k`."""
    parts = value.split()
    if len(parts) != 2:
        raise ValueError("must be a proxy buffer spec: '<number> <size>', e.g. '8 4k'")
    number = parse_int(parts[0], minimum=2, maximum=1 << 16)
    return f"{number} {parse_size(parts[1])}"

