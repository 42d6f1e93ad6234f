"""What kube-apiserver's decoder and name validation check in a write's body before any storage logic.

- `check_body`: the body is a JSON object whose apiVersion/kind fit the URL, with a well-typed metadata
  (labels and annotations maps of strings, string names, a list of string finalizers); `fieldValidation`
  applies to kinds that know their fields. Returns the object in storage form with private top-level and
  metadata dicts.
- `validate_name`: an object name a kind accepts (DNS-1123 label for Namespaces and Services, subdomain for
  the rest), refused with 422 naming `metadata.name`.
"""

from __future__ import annotations

import re
from typing import Any

from ingressctl.devcluster import errors
from ingressctl.devcluster.resources import Obj, ResourceKind

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def check_body(kind: ResourceKind, body: Any, *, field_validation: str = "",
               warnings: list[str] | None = None) -> Obj:
    """Type checks a real API server's decoder makes; the body's apiVersion/kind must fit the URL.
    Returns the object in storage form with a private top-level dict and metadata dict.

    `field_validation` (the request's fieldValidation: "", Ignore, Warn or Strict) applies to kinds that
    know their fields (`unknown_fields`): Strict refuses unknown fields (400), Warn adds one warning each.
    """
    if not isinstance(body, dict):
        raise errors.bad_request(f"the body of the request must be a JSON object describing a "
                                 f"{kind.kind}")
    api_version = body.get("apiVersion")
    if api_version not in (None, "", kind.api_version):
        raise errors.bad_request(f"the API version in the data ({api_version}) does not match the "
                                 f"expected API version ({kind.api_version})")
    body_kind = body.get("kind")
    if body_kind not in (None, "", kind.kind):
        raise errors.bad_request(f"the kind in the data ({body_kind}) does not match the expected kind "
                                 f"({kind.kind})")
    meta = body.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata: expected an object")
    obj = dict(body)
    meta = obj["metadata"] = dict(meta)
    for name in ("labels", "annotations"):
        value = meta.get(name)
        if value is None:
            meta.pop(name, None)
        elif not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise errors.bad_request(f"metadata.{name}: expected a map of strings to strings")
    for name in ("name", "namespace", "generateName", "resourceVersion", "uid"):
        if meta.get(name) is not None and not isinstance(meta[name], str):
            raise errors.bad_request(f"metadata.{name}: expected a string")
    finalizers = meta.get("finalizers")
    if finalizers is not None and not (isinstance(finalizers, list)
                                       and all(isinstance(f, str) for f in finalizers)):
        raise errors.bad_request("metadata.finalizers: expected a list of strings")
    if kind.unknown_fields is not None and field_validation in ("Strict", "Warn"):
        unknown = kind.unknown_fields(obj)
        if unknown and field_validation == "Strict":
            raise errors.bad_request(
                f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: strict '
                "decoding error: " + ", ".join(f'unknown field "{path}"' for path in unknown))
        if warnings is not None:
            warnings.extend(f'unknown field "{path}"' for path in unknown)
    if kind.to_storage is not None:
        obj = kind.to_storage(obj)
    return obj

def validate_name(kind: ResourceKind, name: str) -> None:
    label_only = kind.storage_id in ("/namespaces", "/services")
    pattern = _DNS_LABEL if label_only else _DNS_SUBDOMAIN
    limit = 63 if label_only else 253
    if len(name) > limit or not pattern.match(name):
        what = "RFC 1123 label" if label_only else "lowercase RFC 1123 subdomain"
        chars = "'-'" if label_only else "'-' or '.'"
        raise errors.invalid(kind.kind, kind.group, name, [(
            "metadata.name", "FieldValueInvalid",
            f'Invalid value: "{name}": a {what} must consist of lower case alphanumeric characters, '
            f"{chars}, and must start and end with an alphanumeric character "
            f"(at most {limit} characters)")])
