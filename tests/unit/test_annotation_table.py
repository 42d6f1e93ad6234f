"""The annotation table is the one place an annotation is described: every row is complete (docs, a parser or
validators, defaults that are the model's), nothing in the code reads an annotation that is not a row, a wrong
row is refused when the table is built, and a new annotation is one row: parsed, validated, documented and
handled for mergeable Ingresses from that row alone (also in a table of another family that sets the same
fields with another value syntax)."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from ingressctl.app.root import NGINX_CONTROLLER
from ingressctl.configs import parsing
from ingressctl.configs.configmaps import CONFIG_MAP_KEYS, ConfigParams
from ingressctl.kinds.ingress import annotation_docs
from ingressctl.kinds.ingress.annotation_table import Annotation, AnnotationTable, Handling, Minion, Section
from ingressctl.kinds.ingress.annotation_validation import annotation_errors
from ingressctl.kinds.ingress.annotation_validators import validate_bool, validate_required
from ingressctl.kinds.ingress.annotations import (
    IngressAnnotations,
    check_annotations,
    master_annotations,
    minion_annotations,
    parse_annotations,
)
from ingressctl.kinds.ingress.annotations_nginx_org import NGINX_ORG, PROXYING, RATE_LIMITING
from ingressctl.kinds.ingress.validation import validate_ingress
from ingressctl.secret_types import SECRET_TYPE_APIKEY, SECRET_TYPE_CA, SECRET_TYPE_HTPASSWD

PACKAGE = Path(__file__).resolve().parents[2] / "ingressctl"
ROWS = NGINX_ORG.rows
PARSED = (Handling.FIELD, Handling.INGRESS, Handling.PROXY_REDIRECT)


def ingress(annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "a", "namespace": "d", "annotations": annotations},
            "spec": {"rules": [{"host": "a.example.com", "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]}}


# ------------------------------------------------------------------------------------------ complete rows

def test_every_row_has_docs_and_a_parser_or_validators() -> None:
    assert len(ROWS) >= 70
    for row in ROWS:
        assert row.effect.strip(), row.key
        assert bool(row.syntax) == bool(row.section.values_column), row.key  # its section shows values
        if row.handling not in PARSED and not row.checks:
            # Listed only (nothing parses or validates it): its one effect is a mergeable Ingress rule.
            assert row.handling is Handling.NONE and (not row.master or row.minion is Minion.DENIED), row.key
    assert {r.key for r in ROWS if r.handling is Handling.NONE and not r.checks} == set()


def test_the_docs_tables_list_every_row_once() -> None:
    documented = [m.group(1) for block in annotation_docs.blocks(NGINX_ORG).values()
                  for m in re.finditer(r"^\| `([^`]+)` \|", block, re.MULTILINE)]
    assert sorted(documented) == sorted(NGINX_ORG.by_key)


def test_parsed_rows_set_fields_of_the_model() -> None:
    ingress_fields = {f.name for f in dataclasses.fields(IngressAnnotations)} - {"params", "errors"}
    params = {f.name for f in dataclasses.fields(ConfigParams)}
    assert {r.sets for r in ROWS if r.handling is Handling.INGRESS} == ingress_fields
    assert all(r.sets in params for r in ROWS if r.handling in (Handling.FIELD, Handling.PROXY_REDIRECT))
    assert all(r.parse is None and not r.sets for r in ROWS if r.handling not in PARSED)


def test_defaults_are_the_models_and_the_config_map_keys_are_named() -> None:
    """A literal default is what the model holds without the annotation (and what its ConfigMap key's parser
    makes of it); a row whose namesake ConfigMap key sets the same field says so, and no other does."""
    model = ConfigParams()
    for row in ROWS:
        if row.default:
            assert row.handling is Handling.FIELD and row.parse is not None, row.key
            assert row.parse(row.default) == getattr(model, row.sets), row.key
        namesake = row.key.partition("/")[2]
        if row.handling is Handling.FIELD and CONFIG_MAP_KEYS.get(namesake, ("",))[0] == row.sets:
            assert row.config_map_key == namesake, row.key
        if row.config_map_key:
            field, parse = CONFIG_MAP_KEYS[row.config_map_key]
            assert field == row.sets, row.key
            if row.default:
                assert parse(row.default) == getattr(model, field), row.key
    assert [r.key for r in ROWS if r.config_map_key == "ssl-redirect"] == [
        "nginx.org/ssl-redirect", "ingress.kubernetes.io/ssl-redirect"]


# ----------------------------------------------------------------------------------- nothing outside it

class Recording(dict[str, Any]):
    """Annotations that remember every name looked up in them."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.looked_up: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.looked_up.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.looked_up.add(str(key))
        return super().__contains__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.looked_up.add(key)
        return super().get(key, default)


def test_every_annotation_the_parser_or_validation_looks_at_is_a_row() -> None:
    """With every row set, with each row alone and with none of them, the parser, validation and the
    mergeable rules look up no name that is not a row of the table."""
    values = ["", "true", "x", "10s"]
    cases = [{r.key: v for r in ROWS} for v in values]
    cases += [{r.key: v} for r in ROWS for v in values] + [{}]
    looked_up: set[str] = set()
    for anns in cases:
        anns = {**anns, "other/annotation": "x", "nginx.org/not-a-row": "x"}
        for snippets in (False, True):
            rec = Recording(anns)
            parse_annotations(rec, ConfigParams(), snippets_enabled=snippets)
            check_annotations(rec, snippets_enabled=snippets)
            annotation_errors(ingress(rec), rec, is_plus=snippets, snippets_enabled=snippets)
            master_annotations(rec)
            minion_annotations(rec, Recording(anns))
            looked_up |= rec.looked_up
    assert looked_up - set(NGINX_ORG.by_key) == set()
    assert len(looked_up) >= 60


def test_no_module_spells_an_annotation_that_is_not_a_row() -> None:
    """Every string in the code that is exactly a name of these families is a row (or one of the Secret types
    and the controller name, which share the prefix): no module reads an annotation the table lacks."""
    name = re.compile(r"(?:nginx\.org|nginx\.com|ingress\.kubernetes\.io|appprotectdos\.f5\.com)"
                      r"/[a-z0-9][-a-z0-9.]*")
    not_annotations = {SECRET_TYPE_HTPASSWD, SECRET_TYPE_APIKEY, SECRET_TYPE_CA, NGINX_CONTROLLER}
    unknown: dict[str, str] = {}
    spelled: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and name.fullmatch(node.value):
                spelled.add(node.value)
                if node.value not in NGINX_ORG.by_key and node.value not in not_annotations:
                    unknown[node.value] = str(path.relative_to(PACKAGE))
    assert unknown == {}
    assert "ingress.kubernetes.io/ssl-redirect" in spelled


# ----------------------------------------------------------------------------------------- wrong rows

def _row(key: str, **kw: Any) -> Annotation:
    base: dict[str, Any] = {"section": PROXYING, "syntax": "time", "effect": "e", "parse": parsing.parse_time,
                            "sets": "proxy_read_timeout"}
    return Annotation(key, **{**base, **kw})


@pytest.mark.parametrize(("rows", "message"), [
    ([_row("a/x"), _row("a/x")], "annotation a/x: listed twice"),
    ([_row("a/x", sets="no_such_field")], "annotation a/x: sets 'no_such_field', which is not a"),
    ([_row("a/x", parse=None)], "annotation a/x: a field row needs `parse` and `sets`"),
    ([_row("a/x", handling=Handling.NONE)], "annotation a/x: a none row is not parsed by the table's parser"),
    ([_row("a/x", config_map_key="proxy-send-timeout")],
     "annotation a/x: the ConfigMap key 'proxy-send-timeout' does not set 'proxy_read_timeout'"),
    ([_row("a/x", group="a/lead")], "annotation a/x: group 'a/lead' must be led by its own row, listed"),
    ([_row("a/x", group="a/lead"), _row("a/lead", group="a/lead")], "group 'a/lead' must be led by its own"),
    ([_row("a/x", requires="a/y")], "annotation a/x: names 'a/y', which is not a row of the table"),
    ([_row("a/x", deprecated=True)], "annotation a/x: a deprecated row names its successor"),
    ([_row("a/x", minion=Minion.MERGED)], "annotation a/x: a MERGED row, and only such a row, has a `merge`"),
    ([_row("a/x", handling=Handling.PROXY_REDIRECT, parse=None)], "proxy-redirect is two rows"),
])
def test_the_table_refuses_a_wrong_row(rows: list[Annotation], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        AnnotationTable("test", __name__, rows)


def test_the_docs_refuse_what_a_section_cannot_show() -> None:
    bad_cell = AnnotationTable("test", __name__, [_row("a/x", effect="one\ntwo")])
    with pytest.raises(ValueError, match="annotation a/x: a docs cell has a newline"):
        annotation_docs.blocks(bad_cell)
    no_column = AnnotationTable("test", __name__, [_row("a/x", section=RATE_LIMITING,
                                                        config_map_key="proxy-read-timeout")])
    with pytest.raises(ValueError, match="annotation a/x: section rate-limiting has no ConfigMap key column"):
        annotation_docs.blocks(no_column)
    table = AnnotationTable("test", __name__, [_row("a/x")])
    with pytest.raises(ValueError, match="the document has no block 'proxying'"):
        annotation_docs.replace_blocks("# no markers\n", table)


# --------------------------------------------------------------------------------- a new row, end to end

# Another family's two annotations onto the fields of nginx.org/proxy-send-timeout and -buffering, with their
# own value syntax (seconds as an integer; "on"/"off"), as the ingress-nginx family will have them.
SECONDS = Section("seconds")


def _on_off(value: str) -> bool:
    if value not in ("on", "off"):
        raise ValueError("must be 'on' or 'off'")
    return value == "on"


NEW_ROWS = (
    Annotation("example.com/proxy-send-timeout", SECONDS, "integer seconds", "`proxy_send_timeout`",
               (validate_required,), lambda v: f"{parsing.parse_int(v, minimum=1, maximum=3600)}s",
               sets="proxy_send_timeout", config_map_key="proxy-send-timeout", default="60",
               minion=Minion.INHERITED),
    Annotation("example.com/proxy-buffering", SECONDS, "`on`, `off`", "`proxy_buffering`",
               parse=_on_off, sets="proxy_buffering", master=False, minion=Minion.DENIED),
)


def test_a_new_row_is_parsed_validated_documented_and_merged_from_the_row_alone() -> None:
    table = AnnotationTable("example.com", __name__, NEW_ROWS)
    given = {"example.com/proxy-send-timeout": "15", "example.com/proxy-buffering": "off",
             "nginx.org/proxy-send-timeout": "1s"}
    anns, warnings = parse_annotations(given, ConfigParams(), table=table)
    assert anns.errors == () and warnings == []
    assert anns.params.proxy_send_timeout == "15s"  # the other family's row is not read with this table
    assert anns.params.proxy_buffering is False
    assert check_annotations({"example.com/proxy-send-timeout": "0"}, table=table) == [
        'annotation example.com/proxy-send-timeout: invalid value "0": must be between 1 and 3600']
    # Validation: the row's NIC validator first; the parser for a value the validator lets through.
    errors = annotation_errors(ingress({}), {"example.com/proxy-send-timeout": "",
                                             "example.com/proxy-buffering": "maybe"}, table=table)
    assert [str(e) for e in errors] == [
        'annotations.example.com/proxy-buffering: Invalid value: "maybe": must be \'on\' or \'off\'',
        "annotations.example.com/proxy-send-timeout: Required value"]
    # Mergeable Ingresses: the master/minion attributes.
    master = {"example.com/proxy-send-timeout": "9", "example.com/proxy-buffering": "on"}
    assert master_annotations(master, table) == ({"example.com/proxy-send-timeout": "9"},
                                                 ["example.com/proxy-buffering"])
    assert minion_annotations({"example.com/proxy-buffering": "on"}, master, table) == (
        {"example.com/proxy-send-timeout": "9"}, ["example.com/proxy-buffering"])
    # Docs: a table of the section, the default from the ConfigMap key of the same field.
    assert annotation_docs.blocks(table)["seconds"].splitlines() == [
        "| annotation | ConfigMap key | values (default) | effect |",
        "| --- | --- | --- | --- |",
        "| `example.com/proxy-send-timeout` | `proxy-send-timeout` | integer seconds (`60`) "
        "| `proxy_send_timeout` |",
        "| `example.com/proxy-buffering` | | `on`, `off` | `proxy_buffering` |"]


def test_one_more_row_in_the_nginx_org_table_needs_nothing_else() -> None:
    extended = AnnotationTable("nginx.org", __name__, (*ROWS, Annotation(
        "nginx.org/example-flag", PROXYING, "bool", "an example", (validate_required, validate_bool),
        parsing.parse_bool, sets="proxy_buffering", minion=Minion.INHERITED)))
    anns, _ = parse_annotations({"nginx.org/example-flag": "false"}, ConfigParams(), table=extended)
    assert anns.params.proxy_buffering is False
    errors = annotation_errors(ingress({}), {"nginx.org/example-flag": "no"}, table=extended)
    assert [str(e) for e in errors] == [
        'annotations.nginx.org/example-flag: Invalid value: "no": must be a boolean']
    assert "nginx.org/example-flag" in extended.minion_inherited
    docs = annotation_docs.blocks(extended)["proxying"]
    assert "| `nginx.org/example-flag` | | bool | an example |" in docs
    # The shipped table is unchanged: the example is not an annotation ingressctl reads.
    assert parse_annotations({"nginx.org/example-flag": "false"}, ConfigParams())[0].params.proxy_buffering


def test_app_protect_annotations_are_refused_as_nic_without_app_protect_refuses_them() -> None:
    """NIC's order: App Protect first (ingressctl never has it), so that is the message on NGINX Plus too."""
    anns = {"appprotect.f5.com/app-protect-enable": "True",
            "appprotect.f5.com/app-protect-policy": "default/dataguard-alarm",
            "appprotect.f5.com/app-protect-security-log-enable": "True",
            "appprotect.f5.com/app-protect-security-log": "default/logconf",
            "appprotect.f5.com/app-protect-security-log-destination": "syslog:server=127.0.0.1:514",
            "appprotectdos.f5.com/app-protect-dos-resource": "default/dos-protected"}
    ing = {"metadata": {"name": "cafe", "namespace": "default", "annotations": anns},
           "spec": {"rules": [{"host": "cafe.example.com", "http": {"paths": [
               {"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "tea", "port": {"number": 80}}}}]}}]}}
    for is_plus in (False, True):
        assert [str(e) for e in validate_ingress(ing, is_plus=is_plus)] == [
            f"annotations.{k}: Forbidden: annotation requires AppProtect{'Dos' if 'dos' in k else ''}"
            for k in sorted(anns)]
