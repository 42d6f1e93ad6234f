"""Validation of the `externalAuth` Policy type (NIC 5.5's `validateExternalAuth`), with NIC's field-error
messages.

Guarantees:
- `validate_external_auth(field, spec, enable_snippets=...)` returns every error at once; it never reads the
  cluster (a missing auth Service answers 502/500 at request time, it is not a validation error).
- `authURI` is required and is a path (`/...`, no whitespace, `{`, `}`, `;`, `\\`, quotes, no leading `//`, no
  `..` segment); so is `authSigninRedirectBasePath`. `authServiceName` is required: `svc` or `ns/svc` (a
  DNS-1035 label, with a DNS-1123 label namespace). `authServicePorts` are ports 1-65535. `authSigninURI` is a
  path or an http(s) URL, in which only `$scheme`, `$host`, `$http_host`, `$request_uri` and `$uri` may be
  used. `authSnippets` needs `--enable-snippets`. `sslVerify` needs `sslEnabled`; `trustedCertSecret`
  (`[ns/]name`) needs `sslVerify`; `sslVerifyDepth` >= 0; `sniName` is a DNS-1123 subdomain.
- No string can carry a control character, so no value can add an NGINX directive.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.controller.policy_validation_fields import (
    DNS1123_LABEL,
    boolean,
    namespaced_name,
    optional_subdomain,
    positive_int_or_zero,
)
from ingressctl.validation import FieldError, forbidden, invalid, is_dns1035_label, required

_PATH = re.compile(r"/[^\s{};\\\"'`#$\x00-\x1f\x7f]{0,2047}")
_SIGNIN = re.compile(r"(?:https?://[A-Za-z0-9.\-\[\]:]+|)(?:/[^\s{};\\\"'`#\x00-\x1f\x7f]{0,2047})?")
SIGNIN_VARIABLES = ("scheme", "host", "http_host", "request_uri", "uri")
_SIGNIN_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def validate_path(field: str, path: Any) -> list[FieldError]:
    """A location path of the policy: `/...` without characters that NGINX or a URI would misread."""
    if not isinstance(path, str) or not _PATH.fullmatch(path):
        return [invalid(field, path, "must start with / and must not include any whitespace character, "
                                     "'{', '}', ';', '#', '$', quotes or backslashes")]
    if path.startswith("//"):
        return [invalid(field, path, "must not start with '//' (a protocol-relative URL)")]
    if ".." in path.split("/"):
        return [invalid(field, path, "must not contain '..' path segments")]
    return []


def split_service_name(value: str) -> tuple[str, str]:
    """`ns/svc` -> ("ns", "svc"); `svc` -> ("", "svc")."""
    if "/" in value:
        ns, _, name = value.partition("/")
        return ns, name
    return "", value


def validate_service_name(field: str, value: Any) -> list[FieldError]:
    """NIC's `validateVirtualServerServiceName`: a DNS-1035 label, or `ns/name` with a DNS-1123 label
    namespace."""
    if not value:
        return [required(field)]
    if not isinstance(value, str):
        return [invalid(field, value, "must be a string")]
    ns, name = split_service_name(value)
    errs = [invalid(field, value, m) for m in is_dns1035_label(name)]
    if "/" in value and not DNS1123_LABEL.fullmatch(ns):
        errs.append(invalid(field, value, "the namespace must be a DNS-1123 label"))
    return errs


def _validate_signin(field: str, value: Any) -> list[FieldError]:
    if value in (None, ""):
        return []
    if not isinstance(value, str) or not _SIGNIN.fullmatch(_SIGNIN_VAR.sub("x", value)) \
            or not value.startswith(("/", "http://", "https://")):
        return [invalid(field, value, "must be a path or an http(s) URL without whitespace, quotes, "
                                      "backslashes, '{', '}', ';' or '#'")]
    rest = _SIGNIN_VAR.sub("", value)
    if "$" in rest:
        return [invalid(field, value, "a '$' must start a variable")]
    errs = []
    for braced, bare in _SIGNIN_VAR.findall(value):
        name = braced or bare
        if name not in SIGNIN_VARIABLES:
            errs.append(invalid(field, value, f"'{name}' is not a supported variable (supported: "
                                              f"{', '.join(SIGNIN_VARIABLES)})"))
    return errs


def validate_external_auth(field: str, spec: Mapping[str, Any], *, enable_snippets: bool) -> list[FieldError]:
    """See the module docstring."""
    errs: list[FieldError] = []
    uri = spec.get("authURI")
    if not uri:
        errs.append(required(f"{field}.authURI"))
    else:
        errs += validate_path(f"{field}.authURI", uri)
    errs += validate_service_name(f"{field}.authServiceName", spec.get("authServiceName"))
    ports = spec.get("authServicePorts")
    if ports is not None:
        if not isinstance(ports, list):
            errs.append(invalid(f"{field}.authServicePorts", ports, "must be a list of ports"))
        else:
            for i, p in enumerate(ports):
                if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 65535:
                    errs.append(invalid(f"{field}.authServicePorts[{i}]", p,
                                        "must be between 1 and 65535, inclusive"))
    errs += _validate_signin(f"{field}.authSigninURI", spec.get("authSigninURI"))
    base = spec.get("authSigninRedirectBasePath")
    if base not in (None, ""):
        errs += validate_path(f"{field}.authSigninRedirectBasePath", base)
    snippets = spec.get("authSnippets")
    if snippets not in (None, ""):
        if not enable_snippets:
            errs.append(forbidden(f"{field}.authSnippets", "snippets are not enabled (--enable-snippets)"))
        elif not isinstance(snippets, str):
            errs.append(invalid(f"{field}.authSnippets", snippets, "must be a string"))
    for name in ("sslEnabled", "sslVerify"):
        errs += boolean(f"{field}.{name}", spec.get(name))
    if spec.get("sslVerify") is True and spec.get("sslEnabled") is not True:
        errs.append(forbidden(f"{field}.sslVerify", "sslVerify requires sslEnabled to be true"))
    errs += positive_int_or_zero(f"{field}.sslVerifyDepth", spec.get("sslVerifyDepth"))
    trusted = spec.get("trustedCertSecret")
    if trusted not in (None, "") and spec.get("sslVerify") is not True:
        errs.append(forbidden(f"{field}.trustedCertSecret",
                              "trustedCertSecret requires sslVerify to be true"))
    errs += namespaced_name(f"{field}.trustedCertSecret", trusted)
    errs += optional_subdomain(f"{field}.sniName", spec.get("sniName"))
    return errs
