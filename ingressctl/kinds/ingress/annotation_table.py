"""Annotations as data: the row type of an annotation table, and the lookups the parser, validation and docs
read from a table. A family of annotations (`nginx.org/*`, and others beside it) is one `AnnotationTable`.

Guarantees:
- An `Annotation` row holds everything about one annotation: its key; NIC's validators in order (led by the
  NGINX Plus and snippets checks its `needs_plus` / `needs_snippets` call for: `checks`); the parser (value ->
  typed value) and what the value sets (`handling` and `sets`: a `ConfigParams` field, an `IngressAnnotations`
  field, or a named special handling); its default (the ConfigMap key that sets the same field, else a
  literal in the annotation's syntax); whether masters and minions may have it (NIC's deny and inheritance
  lists); its relations to other rows (`ignored_with`, `requires`, `group`); its docs (section, value
  syntax, effect, as Markdown); and, for a family read on behalf of another controller (ingress-nginx's),
  what ingressctl makes of it (`status`, `reason`, `fail_closed`).
- Rows of different families may set the same field with different value syntaxes: a row names its field,
  not its neighbours.
- `AnnotationTable` checks its rows when it is built and raises `ValueError` naming the wrong row: keys
  unique; a parsed row names its field (a `FIELD` row a `ConfigParams` field); a ConfigMap key sets the same
  field; a group starts with its leader; relations name rows of the table; `MERGED` rows have a merge.
- Reading a table per Ingress costs dict lookups: everything the parser and validation need is computed when
  the table is built. Rows of one kind are applied in table order, which is also their order in the docs.
- Nothing registers itself: a family's table is one module-level `AnnotationTable(...)` of its rows.
- `status` defaults to SERVED with no reason, and nothing in the `nginx.org` family's reading looks at it:
  the status, reason and `fail_closed` are read by the ingress-nginx family's translator and report
  (`kinds/ingress/ingress_nginx/`) and its docs.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ingressctl.configs.configmaps import CONFIG_MAP_KEYS, ConfigParams
from ingressctl.kinds.ingress.annotation_validators import (
    AnnotationValidator,
    validate_plus_only,
    validate_snippets,
)

_CONFIG_PARAMS_FIELDS = frozenset(f.name for f in dataclasses.fields(ConfigParams))


class Handling(enum.Enum):
    """What the parser does with a row's value."""

    FIELD = "field"                    # the parsed value sets the ConfigParams field `sets`
    INGRESS = "ingress"                # the parsed value sets the IngressAnnotations field `sets`
    PROXY_REDIRECT = "proxy-redirect"  # the two proxy-redirect rows, parsed together into `sets`
    POLICIES = "policies"              # not parsed here: the Ingress's Policies (kinds/ingress/policies.py)
    MERGEABLE = "mergeable"            # not parsed here: the model reads it (master or minion)
    FAMILY = "family"                  # `parse` checks the value; the family's own translator applies it
    NONE = "none"                      # nothing reads the value: validated only (NGINX Plus), or listed only


class Status(enum.Enum):
    """What ingressctl does with an annotation of another controller's family (docs and the report)."""

    SERVED = "served"              # honoured with that controller's semantics
    TRANSLATED = "translated"      # mapped onto ingressctl's equivalent, same observable behaviour
    APPROXIMATED = "approximated"  # honoured in part (the reason says how); a Warning event names it
    IGNORED = "ignored"            # not honoured, the rest of the Ingress is served; a Warning event names it
    REFUSED = "refused"            # the Ingress is rejected (`Rejected`): serving it without it is unsafe


class Minion(enum.Enum):
    """What a mergeable minion does with the row (NIC's minion lists)."""

    OWN = "own"              # the minion's own value applies (to its locations); the master's is not
    INHERITED = "inherited"  # a minion without it takes the master's (NIC's minion inheritance list)
    MERGED = "merged"        # the master's and the minion's values are combined by the row's `merge`
    DENIED = "denied"        # a minion may not have it: removed with a warning (NIC's minion deny list)


@dataclass(frozen=True)
class Section:
    """A table of the docs: its rows are the table's rows of this section, in table order."""

    name: str                                 # names the docs block (`annotation_docs.markers`)
    config_map_column: bool = True            # a "ConfigMap key" column
    values_column: str = "values (default)"   # the header of the values column ("" for none)
    effect_column: str = "effect"             # the header of the effect column


@dataclass(frozen=True)
class Annotation:
    """One annotation: see the module docstring. The docs fields are Markdown, one table cell each."""

    key: str
    section: Section
    syntax: str                                          # docs: the values it takes ("" for none)
    effect: str                                          # docs: what it does
    validators: tuple[AnnotationValidator, ...] = ()     # NIC's, in order; the first failing one stops
    parse: Callable[[str], Any] | None = None            # value -> typed value; ValueError: invalid
    handling: Handling = Handling.FIELD
    sets: str = ""                                       # the field the parsed value sets
    group: str = ""              # the leader's key: the group applies together, all or none (see the parser)
    config_map_key: str = ""     # the default is this ConfigMap key's value (it sets the same field) ...
    default: str = ""            # ... whose own default (or, without one, the model's) is this literal
    default_note: str = ""       # docs: what the default means, or where it comes from when not a literal
    master: bool = True          # False: a master may not have it (NIC's master deny list)
    minion: Minion = Minion.OWN
    merge: Callable[[str, str | None], str] | None = None  # MERGED: (master's, minion's or None) -> value
    needs_snippets: bool = False  # applied only with --enable-snippets; rejected without
    needs_plus: bool = False      # NGINX Plus only: rejected on NGINX open source
    ignored_with: str = ""        # parsed but ignored, with a warning, when this row is set too
    deprecated: bool = False      # the old name of `ignored_with`: read with a warning saying so
    requires: str = ""            # parsed but ignored, with a warning, when this row is not set
    status: Status = Status.SERVED  # another controller's family: what ingressctl makes of it ...
    reason: str = ""                # ... and why (docs, events); not implemented yet: what it will be
    fail_closed: bool = False       # not yet implemented (`handling` NONE): refuse the Ingress, not ignore it
    checks: tuple[AnnotationValidator, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        plus = self.needs_plus and validate_plus_only not in self.validators  # else NIC's order is given
        lead = ((validate_plus_only,) if plus else ()) + (
            (validate_snippets,) if self.needs_snippets else ())
        object.__setattr__(self, "checks", lead + self.validators)


class AnnotationTable:
    """A family's rows and the lookups read per Ingress (see the module docstring)."""

    def __init__(self, family: str, source: str, rows: Sequence[Annotation]) -> None:
        self.family = family          # e.g. "nginx.org": names the docs blocks
        self.source = source          # the module that holds the rows (named in the docs blocks)
        self.rows = tuple(rows)
        self.by_key: dict[str, Annotation] = {}
        for row in self.rows:
            if row.key in self.by_key:
                raise ValueError(f"annotation {row.key}: listed twice")
            self.by_key[row.key] = row
        for row in self.rows:
            self._check(row)
        by_key = sorted(self.rows, key=lambda r: r.key)
        # The parser's passes (see kinds/ingress/annotations.py), each in a fixed order.
        self.fields = {r.key: r for r in by_key if r.handling is Handling.FIELD and not r.group}
        self.ignorable = tuple(r for r in by_key if r.ignored_with)
        self.requiring = tuple(r for r in by_key if r.requires)
        leaders = [r.key for r in self.rows if r.group == r.key]
        self.groups = tuple(tuple(r for r in self.rows if r.group == lead) for lead in leaders)
        self.per_ingress = tuple(r for r in self.rows if r.handling is Handling.INGRESS)
        self.proxy_redirect = tuple(r for r in self.rows if r.handling is Handling.PROXY_REDIRECT)
        if len(self.proxy_redirect) not in (0, 2) or len({r.sets for r in self.proxy_redirect}) > 1:
            raise ValueError(f"{family}: proxy-redirect is two rows (from, to) that set one field")
        # Validation: key -> the row's checks, for rows that have any.
        self.validators = {r.key: r.checks for r in self.rows if r.checks}
        # Mergeable Ingresses.
        self.master_denied = frozenset(r.key for r in self.rows if not r.master)
        self.minion_denied = frozenset(r.key for r in self.rows if r.minion is Minion.DENIED)
        self.minion_inherited = frozenset(r.key for r in self.rows if r.minion is Minion.INHERITED)
        self.minion_merged = {r.key: r.merge for r in self.rows if r.merge is not None}
        self.sections = tuple(dict.fromkeys(r.section for r in self.rows))

    def _check(self, row: Annotation) -> None:
        def wrong(why: str) -> ValueError:
            return ValueError(f"annotation {row.key}: {why}")

        parsed = row.handling in (Handling.FIELD, Handling.INGRESS)
        if parsed and (row.parse is None or not row.sets):
            raise wrong(f"a {row.handling.value} row needs `parse` and `sets`")
        if row.handling is Handling.FAMILY:
            if row.parse is None:
                raise wrong("a family row needs `parse` (its value check)")
            parsed = True
        if not parsed and row.parse is not None:
            raise wrong(f"a {row.handling.value} row is not parsed by the table's parser")
        if row.handling is Handling.FIELD and row.sets not in _CONFIG_PARAMS_FIELDS:
            raise wrong(f"sets {row.sets!r}, which is not a ConfigParams field")
        if row.config_map_key and CONFIG_MAP_KEYS.get(row.config_map_key, ("",))[0] != row.sets:
            raise wrong(f"the ConfigMap key {row.config_map_key!r} does not set {row.sets!r}")
        if row.group:
            leader = self.by_key.get(row.group)
            if leader is None or leader.group != leader.key or self.rows.index(leader) > self.rows.index(row):
                raise wrong(f"group {row.group!r} must be led by its own row, listed first")
            if row.handling is not Handling.FIELD:
                raise wrong("only FIELD rows form groups")
        for other in (row.ignored_with, row.requires):
            if other and other not in self.by_key:
                raise wrong(f"names {other!r}, which is not a row of the table")
        if row.deprecated and not row.ignored_with:
            raise wrong("a deprecated row names its successor in `ignored_with`")
        if (row.minion is Minion.MERGED) != (row.merge is not None):
            raise wrong("a MERGED row, and only such a row, has a `merge`")
