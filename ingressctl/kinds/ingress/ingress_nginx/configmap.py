"""ingress-nginx's ConfigMap keys (`--ingress-nginx-compat`): each known key is translated onto ingressctl's
ConfigMap keys (or settings), approximated, or ignored with a reason, before the ConfigMap is parsed.

Guarantees:
- `INGRESS_NGINX_CONFIG_MAP_KEYS` lists every key handled here with its status and reason (the docs table of
  docs/ingress-nginx-migration.md is generated from it). Keys ingressctl and ingress-nginx share with the same
  meaning (`ssl-redirect`, `hsts`, `proxy-read-timeout`, `worker-processes`, ...) keep ingressctl's parser,
  with ingress-nginx's value syntax accepted where it differs (`on`/`off` booleans, sizes with `b` or `g`).
- `translate_config_map(data)` is pure and never raises: it returns the data to parse (ingressctl's keys),
  settings that have no ConfigMap key of ingressctl's (request buffering, next-upstream), and one
  `(key, message)` per ingress-nginx key not honoured in full or whose value is invalid, for the ConfigMap's
  Warning events (an error of a renamed key names the key written). Where an ingressctl key and an
  ingress-nginx key set the same thing, ingressctl's wins, with a message naming both.
- Only keys present are translated: ingress-nginx's own defaults (HSTS on, 308 redirects, ...) are not applied
  to the whole configuration, so Ingresses without ingress-nginx annotations render exactly as without the
  flag. `with_ingress_nginx_keys(parse)` wraps a ConfigMap parser with the translation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ingressctl.configs import directive_values
from ingressctl.configs.configmaps import ConfigParams
from ingressctl.kinds.ingress.ingress_nginx import values as v
from ingressctl.kinds.ingress.ingress_nginx.header_maps import HEADER_NAME

TRANSLATED, APPROXIMATED, IGNORED = "translated", "approximated", "ignored"


@dataclass(frozen=True)
class Key:
    """One ingress-nginx ConfigMap key: its status, what it becomes, and why."""

    name: str
    status: str
    effect: str
    reason: str = ""


def _k(name: str, status: str, effect: str, reason: str = "") -> Key:
    return Key(name, status, effect, reason)


_SAME = "the same key of ingressctl"
INGRESS_NGINX_CONFIG_MAP_KEYS: tuple[Key, ...] = (
    _k("proxy-body-size", TRANSLATED, "`client-max-body-size`", "ingress-nginx's size syntax (`b`, `g`)"),
    _k("proxy-connect-timeout", TRANSLATED, _SAME, "integer seconds as ingress-nginx writes them"),
    _k("proxy-read-timeout", TRANSLATED, _SAME),
    _k("proxy-send-timeout", TRANSLATED, _SAME),
    _k("proxy-buffering", TRANSLATED, _SAME, "`on`/`off` as well as booleans"),
    _k("proxy-buffer-size", TRANSLATED, _SAME + ", and the size of `proxy-buffers`"),
    _k("proxy-buffers-number", TRANSLATED, "`proxy-buffers: <number> <proxy-buffer-size or 4k>`"),
    _k("proxy-busy-buffers-size", TRANSLATED, _SAME),
    _k("proxy-max-temp-file-size", TRANSLATED, _SAME),
    _k("proxy-request-buffering", TRANSLATED, "`proxy_request_buffering` of every Ingress location"),
    _k("proxy-next-upstream", TRANSLATED, "`proxy_next_upstream` of every Ingress location"),
    _k("proxy-next-upstream-tries", TRANSLATED, "`proxy_next_upstream_tries` of every Ingress location"),
    _k("proxy-next-upstream-timeout", TRANSLATED, "`proxy_next_upstream_timeout` of every Ingress location"),
    _k("client-body-buffer-size", TRANSLATED, _SAME),
    _k("ssl-redirect", TRANSLATED, _SAME),
    _k("http-redirect-code", TRANSLATED, _SAME,
       "ingress-nginx's default is 308; ingressctl's stays 301 unless the key is set (Ingresses with "
       "ingress-nginx annotations get 308 anyway)"),
    _k("hsts", TRANSLATED, _SAME,
    "ingress-nginx's default is on; ingressctl's stays off unless the key is set"),
    _k("hsts-max-age", TRANSLATED, _SAME),
    _k("hsts-include-subdomains", TRANSLATED, _SAME),
    _k("hsts-preload", APPROXIMATED, "nothing", "ingressctl's HSTS header always carries `preload`"),
    _k("server-tokens", TRANSLATED, _SAME),
    _k("use-http2", TRANSLATED, "`http2`"),
    _k("use-proxy-protocol", TRANSLATED, "`proxy-protocol`"),
    _k("use-forwarded-headers", APPROXIMATED,
       "`real-ip-header: <forwarded-for-header>`, `set-real-ip-from: <proxy-real-ip-cidr>`, "
       "`real-ip-recursive`",
       "the client address is taken from the header; `X-Forwarded-Proto`/`-Host`/`-Port` are not passed on "
       "(ingressctl sends its own)"),
    _k("enable-real-ip", TRANSLATED,
       "`real-ip-header: <forwarded-for-header>`, `set-real-ip-from: <proxy-real-ip-cidr>`"),
    _k("forwarded-for-header", TRANSLATED, "the `real-ip-header` of `use-forwarded-headers`/`enable-real-ip`",
       "default `X-Forwarded-For`"),
    _k("proxy-real-ip-cidr", TRANSLATED, "the `set-real-ip-from` of `use-forwarded-headers`/`enable-real-ip`",
       "default `0.0.0.0/0` (and `::/0`)"),
    _k("compute-full-forwarded-for", IGNORED, "nothing",
    "ingressctl always appends the client to X-Forwarded-For"),
    _k("log-format-upstream", TRANSLATED, "`log-format`",
       "ingress-nginx's own variables (`$proxy_upstream_name`, `$the_real_ip`, ...) are unknown here: such a "
       "format is refused with a warning and the default format kept"),
    _k("log-format-escape-json", TRANSLATED, "`log-format-escaping: json`"),
    _k("disable-access-log", TRANSLATED, "`access-log-off`"),
    _k("error-log-level", TRANSLATED, _SAME),
    _k("keep-alive", TRANSLATED, "`keepalive-timeout` (seconds)"),
    _k("keep-alive-requests", TRANSLATED, "`keepalive-requests`"),
    _k("upstream-keepalive-connections", TRANSLATED, "`keepalive`",
       "ingress-nginx's default is 320; ingressctl's stays 0 unless the key is set"),
    _k("upstream-keepalive-timeout", IGNORED, "nothing", "not an ingressctl setting"),
    _k("upstream-keepalive-requests", IGNORED, "nothing", "not an ingressctl setting"),
    _k("worker-processes", TRANSLATED, _SAME),
    _k("max-worker-connections", TRANSLATED, "`worker-connections`"),
    _k("max-worker-open-files", TRANSLATED, "`worker-rlimit-nofile`"),
    _k("worker-shutdown-timeout", TRANSLATED, _SAME),
    _k("worker-cpu-affinity", TRANSLATED, _SAME),
    _k("load-balance", APPROXIMATED, "`lb-method`", "`ewma` (Lua) is `random two least_conn`"),
    _k("ssl-protocols", TRANSLATED, _SAME),
    _k("ssl-ciphers", TRANSLATED, _SAME),
    _k("ssl-prefer-server-ciphers", TRANSLATED, _SAME),
    _k("proxy-ssl-location-only", IGNORED, "nothing",
       "the `proxy-ssl-*` annotations apply to the Ingress's own locations, which either value gives them"),
    _k("ssl-dh-param", IGNORED, "nothing", "a Secret reference; use `ssl-dhparam-file` with the PEM"),
    _k("hide-headers", TRANSLATED, "`proxy-hide-headers`"),
    _k("server-name-hash-bucket-size", TRANSLATED, "`server-names-hash-bucket-size`"),
    _k("server-name-hash-max-size", TRANSLATED, "`server-names-hash-max-size`"),
    _k("map-hash-bucket-size", TRANSLATED, _SAME),
    _k("variables-hash-bucket-size", TRANSLATED, _SAME),
    _k("variables-hash-max-size", TRANSLATED, _SAME),
    _k("main-snippet", TRANSLATED, "`main-snippets`", "the ConfigMap is the operator's, as in NIC"),
    _k("http-snippet", TRANSLATED, "`http-snippets`"),
    _k("server-snippet", TRANSLATED, "`server-snippets`"),
    _k("location-snippet", TRANSLATED, "`location-snippets`"),
    _k("allow-snippet-annotations", IGNORED, "nothing",
       "snippet annotations follow `--enable-snippets`; a warning says so when the two disagree"),
    _k("annotations-risk-level", IGNORED, "nothing",
       "ingressctl refuses what ingress-nginx's validators refuse, and snippets without `--enable-snippets`"),
    _k("annotation-value-word-blocklist", IGNORED, "nothing", "every annotation value is validated anyway"),
    _k("strict-validate-path-type", IGNORED, "nothing", "ingressctl validates paths as NIC does"),
    _k("client-header-buffer-size", IGNORED, "nothing", "not an ingressctl setting"),
    _k("client-header-timeout", IGNORED, "nothing", "not an ingressctl setting"),
    _k("client-body-timeout", IGNORED, "nothing", "not an ingressctl setting"),
    _k("large-client-header-buffers", IGNORED, "nothing", "not an ingressctl setting"),
    _k("use-gzip", IGNORED, "nothing", "gzip compression is not an ingressctl setting"),
    _k("gzip-level", IGNORED, "nothing", "as `use-gzip`"),
    _k("gzip-types", IGNORED, "nothing", "as `use-gzip`"),
    _k("gzip-min-length", IGNORED, "nothing", "as `use-gzip`"),
    _k("gzip-disable", IGNORED, "nothing", "as `use-gzip`"),
    _k("enable-brotli", IGNORED, "nothing", "no brotli module"),
    _k("limit-req-status-code", IGNORED, "nothing", "ingress-nginx's rate limits answer 503 here"),
    _k("limit-conn-status-code", IGNORED, "nothing", "ingress-nginx's connection limits answer 503 here"),
    _k("block-cidrs", IGNORED, "nothing", "not implemented"),
    _k("block-user-agents", IGNORED, "nothing", "not implemented"),
    _k("block-referers", IGNORED, "nothing", "not implemented"),
    _k("custom-http-errors", IGNORED, "nothing", "use the annotation with a `spec.defaultBackend`"),
    _k("enable-opentelemetry", IGNORED, "nothing", "use the `otel-*` keys"),
    _k("enable-modsecurity", IGNORED, "nothing", "no ModSecurity in ingressctl"),
    _k("enable-owasp-modsecurity-crs", IGNORED, "nothing", "no ModSecurity in ingressctl"),
    _k("global-auth-url", IGNORED, "nothing", "ingressctl has no global authentication"),
    _k("global-allowed-response-headers", TRANSLATED, "the header names (comma-separated) the "
       "`custom-headers` annotation may set; default none, as ingress-nginx",
       "a value with an invalid name is refused whole, with a warning (ingress-nginx drops that name only)"),
    _k("use-geoip2", IGNORED, "nothing", "no GeoIP2 module"),
)
BY_NAME = {k.name: k for k in INGRESS_NGINX_CONFIG_MAP_KEYS}

# ingress-nginx key -> ingressctl key, for the renames (the value is translated by `_VALUES`).
_RENAMES = {
    "proxy-body-size": "client-max-body-size", "use-http2": "http2", "use-proxy-protocol": "proxy-protocol",
    "log-format-upstream": "log-format", "disable-access-log": "access-log-off",
    "keep-alive": "keepalive-timeout", "keep-alive-requests": "keepalive-requests",
    "upstream-keepalive-connections": "keepalive", "max-worker-connections": "worker-connections",
    "max-worker-open-files": "worker-rlimit-nofile", "load-balance": "lb-method",
    "hide-headers": "proxy-hide-headers", "server-name-hash-bucket-size": "server-names-hash-bucket-size",
    "server-name-hash-max-size": "server-names-hash-max-size", "main-snippet": "main-snippets",
    "http-snippet": "http-snippets", "server-snippet": "server-snippets",
    "location-snippet": "location-snippets",
}


def _on_off_bool(value: str) -> str:
    text = value.strip()
    return {"on": "true", "off": "false"}.get(text, text)


def _size(value: str) -> str:
    try:
        return v.buffer_size(value)
    except ValueError:
        return value  # ingressctl's parser reports it


def _body(value: str) -> str:
    try:
        return v.body_size(value)
    except ValueError:
        return value


def _allowed_headers(value: str) -> tuple[str, ...]:
    """ingress-nginx's `global-allowed-response-headers`: comma-separated header names; an invalid one
    refuses the value (ingress-nginx drops that name only, with a log line)."""
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    bad = [n for n in names if not HEADER_NAME.fullmatch(n)]
    if bad:
        raise ValueError(f"invalid header name(s) {', '.join(bad)}")
    return names


_VALUES: dict[str, Callable[[str], str]] = {
    "proxy-body-size": _body, "proxy-buffer-size": _size, "proxy-busy-buffers-size": _size,
    "proxy-max-temp-file-size": _size, "client-body-buffer-size": _size, "proxy-buffering": _on_off_bool,
    "use-http2": _on_off_bool, "use-proxy-protocol": _on_off_bool, "disable-access-log": _on_off_bool,
    "keep-alive": lambda s: f"{s.strip()}s" if s.strip().isdigit() else s,
    "load-balance": lambda s: {"ewma": "random two least_conn"}.get(s.strip(), s.strip()),
}
# Settings without an ingressctl ConfigMap key: key -> (ConfigParams field, parser).
_FIELDS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "proxy-request-buffering": ("proxy_request_buffering", v.on_off_text),
    "proxy-next-upstream": ("proxy_next_upstream", directive_values.parse_proxy_next_upstream),
    "proxy-next-upstream-tries": ("proxy_next_upstream_tries", lambda s: v.integer(s, 0, 1 << 20)),
    "proxy-next-upstream-timeout": ("proxy_next_upstream_timeout", v.seconds),
    "global-allowed-response-headers": ("ingress_nginx_allowed_response_headers", _allowed_headers),
}


@dataclass(frozen=True)
class Translated:
    data: dict[str, str]                 # what ingressctl's ConfigMap parser reads
    fields: dict[str, Any]               # ConfigParams fields no ingressctl key sets
    messages: list[tuple[str, str]]      # (key, message) for the ConfigMap's Warning events


def translate_config_map(data: Mapping[str, Any], *, snippets_enabled: bool = False) -> Translated:
    """See the module docstring."""
    out = {str(k): val for k, val in data.items() if isinstance(val, str)}
    present = {k: out[k] for k in out if k in BY_NAME}
    fields: dict[str, Any] = {}
    messages: list[tuple[str, str]] = []
    for name, value in sorted(present.items()):
        key = BY_NAME[name]
        if key.status == IGNORED:
            if name == "allow-snippet-annotations":
                continue  # a warning only when it disagrees with --enable-snippets (below)
            messages.append((name, f"ingress-nginx key ignored: {key.reason}"))
            continue
        if key.status == APPROXIMATED and name not in ("use-forwarded-headers", "load-balance"):
            messages.append((name, f"ingress-nginx key approximated: {key.reason}"))
        target = _RENAMES.get(name, name)
        translated = _VALUES[name](value) if name in _VALUES else value
        if name in _FIELDS:
            field, parse = _FIELDS[name]
            try:
                fields[field] = parse(value)
            except ValueError as e:
                messages.append((name, f"invalid value {value!r}: {e}"))
            continue
        if target != name:
            out.pop(name)
            if target in data:
                messages.append((name, f"{target} is set too and wins; {name} is ignored"))
                continue
            out[target] = translated
        else:
            out[name] = translated
    _buffers(present, out)
    _real_ip(present, out, messages)
    if "log-format-escape-json" in present and present["log-format-escape-json"].strip() in ("true", "on"):
        out.setdefault("log-format-escaping", "json")
    if "load-balance" in present and present["load-balance"].strip() == "ewma":
        messages.append(("load-balance", "ingress-nginx key approximated: `ewma` is `random two least_conn`"))
    allow = present.get("allow-snippet-annotations", "").strip().lower()
    if allow in ("true", "false") and (allow == "true") != snippets_enabled:
        messages.append(("allow-snippet-annotations",
                         f"snippet annotations are {'on' if snippets_enabled else 'off'} by "
                         f"--enable-snippets; "
                         f"allow-snippet-annotations: {allow} does not change that"))
    return Translated(out, fields, messages)


def _buffers(present: Mapping[str, str], out: dict[str, str]) -> None:
    if "proxy-buffers-number" not in present or "proxy-buffers" in out:
        return
    number = present["proxy-buffers-number"].strip()
    out["proxy-buffers"] = f"{number} {out.get('proxy-buffer-size', '4k')}"


def _real_ip(present: Mapping[str, str], out: dict[str, str], messages: list[tuple[str, str]]) -> None:
    on = [k for k in ("use-forwarded-headers", "enable-real-ip")
          if present.get(k, "").strip().lower() in ("true", "on", "1")]
    for k in ("forwarded-for-header", "proxy-real-ip-cidr"):
        out.pop(k, None)
    if not on:
        return
    if "real-ip-header" in out or "set-real-ip-from" in out:
        messages.append((on[0], "real-ip-header / set-real-ip-from are set too and win"))
        return
    out["real-ip-header"] = present.get("forwarded-for-header", "X-Forwarded-For").strip()
    out["set-real-ip-from"] = present.get("proxy-real-ip-cidr", "0.0.0.0/0,::/0").strip()
    if "use-forwarded-headers" in on:
        out["real-ip-recursive"] = "true"
        messages.append(("use-forwarded-headers", "ingress-nginx key approximated: "
                                                  + BY_NAME["use-forwarded-headers"].reason))


def with_ingress_nginx_keys(parse: Callable[[Any], tuple[ConfigParams, list[tuple[str, str]]]], *,
                            snippets_enabled: bool = False,
                            ) -> Callable[[Any], tuple[ConfigParams, list[tuple[str, str]]]]:
    """`parse` (a ConfigMap parser) reading ingress-nginx's keys too (`translate_config_map` first)."""

    def parse_with_ingress_nginx(data: Mapping[str, Any] | None) -> tuple[ConfigParams, list[tuple[str,
    str]]]:
        if not data or not any(k in BY_NAME for k in data):
            return parse(data)
        tr = translate_config_map(data, snippets_enabled=snippets_enabled)
        params, errors = parse(tr.data)
        # An error of a renamed key is reported under the key the ConfigMap has.
        written = {target: name for name, target in _RENAMES.items() if name in data and target not in data}
        errors = [(written.get(k, k), m) for k, m in errors]
        if tr.fields:
            params = dataclasses.replace(params, **tr.fields)
        return params, sorted([*errors, *tr.messages])

    return parse_with_ingress_nginx


def docs_table() -> str:
    """The Markdown table of docs/ingress-nginx-migration.md's ConfigMap section."""
    lines = ["| ConfigMap key | status | ingressctl | why / how |", "| --- | --- | --- | --- |"]
    for k in INGRESS_NGINX_CONFIG_MAP_KEYS:
        lines.append(f"| `{k.name}` | **{k.status}** | {k.effect} | {k.reason} |")
    return "\n".join(lines)
