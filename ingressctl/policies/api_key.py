"""The `apiKey` Policy type: API keys checked against an `nginx.org/apikey` Secret, and that Secret type.

Validation:
- apiKey: at least one header or query name; header names are HTTP tokens, query names `[_A-Za-z0-9]+`;
  `clientSecret` a DNS-1123 subdomain.
- The Secret (`APIKEY_SECRET`): every data value (a client's API key) must be valid UTF-8, non-empty, free
  of control characters and unique (NIC's rule); the file written for NGINX (mode 0600) holds the map
  entries of `apikey_map_entries`, so the keys never appear in a resource's configuration file.
Rendering:
- apiKey, without njs (open-source NGINX 1.22 has no njs module here): an http-level
  `map "<header and query values>" $apikey_auth_<owner>_<policy>` whose entries come from the Secret's
  file (exact, case-sensitive regular expressions of the keys; written by the Secret store, mode 0600,
  so keys never appear in the VirtualServer's file), `"" 401` for no key and `default 403`; the context
  answers 401 / 403 from it before anything else runs, then sets `$apikey_client_name` (the Secret data
  key that matched, from a second map) and `$apikey_auth_token` (the supplied value; NIC's is its
  SHA-256, which needs njs) for rate-limit keys and tiers. Both variables exist everywhere (empty
  outside such contexts: the main configuration defines them). A second apiKey in one context is an
  error (500).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.configs.quoting import arg, quote, quote_regex, quote_vars
from ingressctl.policies.base import (
    PolicyContext,
    PolicyResult,
    PolicyType,
    PolicyValidationConfig,
    policy_key,
    short_name,
)
from ingressctl.policies.fields import validate_header_names, validate_secret_name
from ingressctl.secret_types import SECRET_TYPE_APIKEY, SecretType, SecretValidationError, decoded_data
from ingressctl.validation import FieldError, as_dict, as_list, as_str, invalid, required

QUERY_NAME = re.compile(r"[_A-Za-z0-9]+")


def validate_api_key(field: str, spec: Mapping[str, Any], config: PolicyValidationConfig) -> list[FieldError]:
    errs: list[FieldError] = []
    supplied = as_dict(spec.get("suppliedIn"))
    headers, query = as_list(supplied.get("header")), as_list(supplied.get("query"))
    if not headers and not query:
        errs.append(required(f"{field}.suppliedIn", "at least one header or query parameter is required"))
    errs.extend(validate_header_names(f"{field}.suppliedIn.header", headers))
    seen: set[str] = set()
    for i, q in enumerate(query):
        if not QUERY_NAME.fullmatch(as_str(q)):
            errs.append(invalid(f"{field}.suppliedIn.query[{i}]", q,
                                "must consist of letters, digits and '_'"))
        elif q in seen:
            errs.append(invalid(f"{field}.suppliedIn.query[{i}]", q, "duplicate query parameter"))
        seen.add(as_str(q))
    errs.extend(validate_secret_name(f"{field}.clientSecret", spec.get("clientSecret")))
    return errs


APIKEY_MISSING = "401"
APIKEY_UNKNOWN = "403"


def apikey_variable(ctx: PolicyContext) -> str:
    return "$" + short_name(f"apikey_auth_{ctx.owner_namespace}_{ctx.owner_name}_{ctx.policy_namespace}_"
                            f"{ctx.policy_name}")


def apikey_source(spec: Mapping[str, Any]) -> str:
    """The value a client supplies: the concatenation of the named headers and query arguments."""
    supplied = spec.get("suppliedIn") or {}
    parts = ["${http_" + str(h).lower().replace("-", "_") + "}" for h in as_list(supplied.get("header"))]
    parts += ["${arg_" + str(q) + "}" for q in as_list(supplied.get("query"))]
    return "".join(parts)


def render_api_key(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        msg = (f"Multiple API key policies in the same context is not valid. API key policy "
               f"{policy_key(ctx)} is not applied")
        return PolicyResult(warnings=[msg], error=msg)
    secret = ctx.secrets.get("clientSecret")
    variable = apikey_variable(ctx)
    result = PolicyResult()
    include = arg(secret.path if secret else "")
    source = quote_vars(apikey_source(spec))
    result.http.append(f"map {source} {variable} {{ include {include}; "
                       f'"" {APIKEY_MISSING}; default {APIKEY_UNKNOWN}; }}')
    result.http.append(f'map {variable} {variable}_client {{ "~^=(?<client>.*)$" $client; default ""; }}')
    checks = [f"if ({variable} = {APIKEY_MISSING}) {{ return 401; }}",
              f"if ({variable} = {APIKEY_UNKNOWN}) {{ return 403; }}",
              f"set $apikey_client_name {variable}_client;",
              f"set $apikey_auth_token {source};"]
    if ctx.is_server_level:     # an `if` in the server would run before any location could override it
        result.inherited["apiKey"] = checks
    else:
        result.location = checks
    return result


def apikey_map_entries(keys: Mapping[str, str]) -> str:
    """The Secret file of an nginx.org/apikey Secret: one exact, case-sensitive map entry per key
    (client ID -> key), valued `=<client ID>` (never the 401/403 markers)."""
    lines = []
    for client, key in sorted(keys.items()):
        escaped = "".join(ch if ch.isalnum() and ch.isascii() else "\\" + ch for ch in key)
        lines.append(f"{quote_regex('~^' + escaped + '$')} {quote('=' + client)};")
    return "\n".join(lines) + "\n"


_CONTROL = frozenset(chr(c) for c in (*range(0x20), 0x7F))


def _api_keys(secret: Mapping[str, Any]) -> dict[str, str]:
    keys: dict[str, str] = {}
    seen: set[str] = set()
    for client, raw in decoded_data(secret).items():
        try:
            key = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SecretValidationError(f"the API key of client {client} is not valid UTF-8") from None
        if not key:
            raise SecretValidationError(f"the API key of client {client} is empty")
        if any(ch in _CONTROL for ch in key):
            raise SecretValidationError(f"the API key of client {client} contains a control character")
        if key in seen:
            raise SecretValidationError("API Keys cannot be repeated")
        seen.add(key)
        keys[client] = key
    return keys


def validate_apikey_secret(secret: Mapping[str, Any]) -> None:
    if secret.get("type") != SECRET_TYPE_APIKEY:
        raise SecretValidationError(f"APIKey secret must be of the type {SECRET_TYPE_APIKEY}")
    _api_keys(secret)


def apikey_file(secret: Mapping[str, Any]) -> tuple[bytes, int]:
    return apikey_map_entries(_api_keys(secret)).encode(), 0o600


APIKEY_SECRET = SecretType(SECRET_TYPE_APIKEY, validate_apikey_secret, apikey_file)
TYPE = PolicyType(
    key="apiKey",
    label="APIKey",
    validate=validate_api_key,
    render=render_api_key,
    secret_fields={"clientSecret": SECRET_TYPE_APIKEY},
    secret_types=(APIKEY_SECRET,),
    fields_doc=("`suppliedIn` {`header` [...], `query` [...]} (at least one), `clientSecret` (type "
               "`nginx.org/apikey`)"),
    nginx_doc="see below (401 without a key, 403 with an unknown one)",
)
