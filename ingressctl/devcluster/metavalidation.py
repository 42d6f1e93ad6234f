"""kube-apiserver's ObjectMeta validation (apimachinery's api/validation), with its field paths and wording.

- Names: a DNS-1123 subdomain for most kinds, a DNS-1123 label for Namespaces, a DNS-1035 label for Services;
  `generateName` is checked as a prefix (a trailing '-' allowed) before the generated name.
- Labels: keys are qualified names (an optional DNS subdomain prefix and '/', a name part of at most 63
  characters), values valid label values; annotation keys are qualified names and all annotations together
  at most 256 KiB.
Every finding is a field error (path, cause reason, message) for one 422 Invalid.
"""

from __future__ import annotations

import re
from typing import Any

from ingressctl.devcluster.schema import FieldError, go_value

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(rf"^{_LABEL}$")
_DNS1123_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
TOTAL_ANNOTATION_SIZE = 256 * 1024

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                 "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                 "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
             "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
               "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
               "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
_QUALIFIED_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                  "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
                    "'my_value',  or '12345', regex used for validation is "
                    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def name_messages(storage_id: str, name: str, *, prefix: bool = False) -> list[str]:
    """What is wrong with an object name of a stored kind (a generateName prefix when `prefix`)."""
    if prefix and name.endswith("-"):
        name = name[:-1] + "a"          # a prefix may end with '-' (apimachinery's maskTrailingDash)
    if storage_id == "/services":
        pattern, limit, msg = _DNS1035_LABEL, 63, DNS1035_MSG
    elif storage_id == "/namespaces":
        pattern, limit, msg = _DNS1123_LABEL, 63, LABEL_MSG
    else:
        pattern, limit, msg = _DNS1123_SUBDOMAIN, 253, SUBDOMAIN_MSG
    out = []
    if len(name) > limit:
        out.append(f"must be no more than {limit} characters")
    if not pattern.match(name):
        out.append(msg)
    return out


def _subdomain_messages(value: str) -> list[str]:
    out = []
    if len(value) > 253:
        out.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        out.append(SUBDOMAIN_MSG)
    return out


def qualified_name_messages(value: str) -> list[str]:
    """apimachinery's IsQualifiedName."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        out: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        out = ["prefix part must be non-empty"] if not prefix else \
            ["prefix part " + m for m in _subdomain_messages(prefix)]
    else:
        return ["a qualified name " + _QUALIFIED_MSG + " with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"]
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part must be no more than 63 characters")
    if name and not _QUALIFIED.match(name):
        out.append("name part " + _QUALIFIED_MSG)
    return out


def _invalid(path: str, value: Any, msg: str) -> FieldError:
    return (path, "FieldValueInvalid", f"Invalid value: {go_value(value)}: {msg}")


def label_errors(labels: dict[str, str], path: str = "metadata.labels") -> list[FieldError]:
    errs: list[FieldError] = []
    for key in sorted(labels):
        errs.extend(_invalid(path, key, m) for m in qualified_name_messages(key))
        value = labels[key]
        if len(value) > 63:
            errs.append(_invalid(path, value, "must be no more than 63 characters"))
        if not _LABEL_VALUE.match(value):
            errs.append(_invalid(path, value, _LABEL_VALUE_MSG))
    return errs


def annotation_errors(annotations: dict[str, str], path: str = "metadata.annotations") -> list[FieldError]:
    errs: list[FieldError] = []
    for key in sorted(annotations):
        errs.extend(_invalid(path, key, m) for m in qualified_name_messages(key.lower()))
    if sum(len(k) + len(v) for k, v in annotations.items()) > TOTAL_ANNOTATION_SIZE:
        errs.append((path, "FieldValueTooLong",
                     f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE} bytes"))
    return errs


def object_meta_errors(storage_id: str, meta: dict[str, Any], *, names: bool = True) -> list[FieldError]:
    """The field errors of an object's metadata (generateName and name when `names`, labels, annotations)."""
    errs: list[FieldError] = []
    generate = meta.get("generateName") or ""
    if generate and names:
        errs.extend(_invalid("metadata.generateName", generate, m)
                    for m in name_messages(storage_id, generate, prefix=True))
    name = meta.get("name") or ""
    if name and names:
        errs.extend(_invalid("metadata.name", name, m) for m in name_messages(storage_id, name))
    errs.extend(label_errors(meta.get("labels") or {}))
    errs.extend(annotation_errors(meta.get("annotations") or {}))
    return errs
