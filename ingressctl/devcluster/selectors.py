"""Label and field selectors with the grammar and semantics of apimachinery's `labels.Parse`/`fields.Parse`.

Label selectors: comma-separated requirements `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (a,b)`,
`key notin (a,b)`, `key>n`, `key<n`. `!=` and `notin` match objects without the label, as in Kubernetes.
Field selectors: `field=v`, `field==v`, `field!=v`, joined by commas; the fields a resource supports are
looked up by the caller (unknown fields are a 400). Parse errors raise `SelectorError` with a message like the
API server's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")


class SelectorError(ValueError):
    """A selector string that does not parse."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str            # "exists", "!", "=", "!=", "in", "notin", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            have, want = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return have > want if self.op == "gt" else have < want


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|>|<|[^\s!=(),<>]+)")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m:
            raise SelectorError(f"unable to parse requirement: unexpected character at {pos} in {text!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def _check_key(key: str) -> str:
    if not _LABEL_KEY.match(key) or len(key.split("/")[-1]) > 63:
        raise SelectorError(f"unable to parse requirement: invalid label key {key!r}: name part must "
                            "consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                            "with an alphanumeric character")
    return key


def _check_value(value: str) -> str:
    if not _LABEL_VALUE.match(value):
        raise SelectorError(f"unable to parse requirement: invalid label value: {value!r}: a valid label "
                            "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                            "and must start and end with an alphanumeric character")
    return value


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse a label selector string; None or "" selects everything."""
    if not text or not text.strip():
        return LabelSelector(())
    toks = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def take() -> str:
        nonlocal i
        if i >= len(toks):
            raise SelectorError(f"unable to parse requirement: unexpected end of selector {text!r}")
        tok = toks[i]
        i += 1
        return tok

    def value_token() -> str:
        # A value may be empty ("a=" / "a=,b"): the next token is a separator or the end.
        if i >= len(toks) or toks[i] in (",", ")"):
            return ""
        return _check_value(take())

    while i < len(toks):
        tok = take()
        if tok == "!":
            reqs.append(Requirement(_check_key(take()), "!"))
        else:
            key = _check_key(tok)
            if i >= len(toks) or toks[i] == ",":
                reqs.append(Requirement(key, "exists"))
            else:
                op = take()
                if op in ("=", "=="):
                    reqs.append(Requirement(key, "=", (value_token(),)))
                elif op == "!=":
                    reqs.append(Requirement(key, "!=", (value_token(),)))
                elif op in ("in", "notin"):
                    if take() != "(":
                        raise SelectorError(f"unable to parse requirement: found '{toks[i - 1]}', "
                                            "expected: '('")
                    values: list[str] = []
                    while True:
                        values.append(value_token())
                        sep = take()
                        if sep == ")":
                            break
                        if sep != ",":
                            raise SelectorError(f"unable to parse requirement: found '{sep}', "
                                                "expected: ',' or ')'")
                    reqs.append(Requirement(key, op, tuple(values)))
                elif op in (">", "<"):
                    value = take()
                    try:
                        int(value)
                    except ValueError:
                        raise SelectorError(f"unable to parse requirement: for 'Gt', 'Lt' operators, the "
                                            f"value must be an integer: {value!r}") from None
                    reqs.append(Requirement(key, "gt" if op == ">" else "lt", (value,)))
                else:
                    raise SelectorError(f"unable to parse requirement: found '{op}', expected: "
                                        "'=', '!=', '==', 'in', notin'")
        if i < len(toks):
            if toks[i] != ",":
                raise SelectorError(f"unable to parse requirement: found '{toks[i]}', expected: ','")
            i += 1
            if i >= len(toks):
                raise SelectorError(f"unable to parse requirement: trailing ',' in {text!r}")
    return LabelSelector(tuple(reqs))


FieldGetter = Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[tuple[str, bool, str], ...]     # (field, equal?, value)
    getters: Mapping[str, FieldGetter]

    def matches(self, obj: dict[str, Any]) -> bool:
        return all((self.getters[name](obj) == value) == equal for name, equal, value in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def value_of(self, name: str) -> str | None:
        """The value an equality requirement fixes for `name`, if any (used to narrow a scan)."""
        for field_name, equal, value in self.requirements:
            if field_name == name and equal:
                return value
        return None


def parse_field_selector(text: str | None, getters: Mapping[str, FieldGetter]) -> FieldSelector:
    """Parse a field selector against the fields a resource supports."""
    if not text or not text.strip():
        return FieldSelector((), getters)
    reqs: list[tuple[str, bool, str]] = []
    for part in _split_unescaped(text):
        part = part.strip()
        op = next((o for o in ("!=", "==", "=") if o in part), "")
        if not op:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        name, value = part.split(op, 1)
        equal = op != "!="
        name = name.strip()
        if name not in getters:
            raise SelectorError(f'field label not supported: {name}')
        reqs.append((name, equal, _unescape_field(value.strip())))
    return FieldSelector(tuple(reqs), getters)


def _split_unescaped(text: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            cur.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _unescape_field(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)
