"""The documentation cannot rot: the README's flag table is the parser's, docs/annotations.md's tables are the
annotation table's, every annotation, ConfigMap key and metric the code supports is documented (and nothing
it does not support), and the README's demo curl lines work against the real demo (devcluster + controller +
NGINX).

Regenerate the README's flag tables, docs/policies.md's type table and docs/annotations.md's tables with
`python -m tests.integration.test_app_docs --write`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from typing import Any

import pytest

from tests.helpers import free_port, http_get, https_get, wait_until

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO, "README.md")
BEGIN, END = "<!-- flags:begin (generated from ingressctl.cli.build_parser) -->", "<!-- flags:end -->"


def read(path: str) -> str:
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def flag_table() -> str:
    """The Markdown table of every flag, by group, as `ingressctl --help` has them."""
    from ingressctl.cli import build_parser

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")

    lines = ["| flag | default | meaning |", "| --- | --- | --- |"]
    parser = build_parser()
    for group in parser._action_groups:
        for action in group._group_actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            flag = max(action.option_strings, key=len)
            if action.nargs == "?" and action.const is True:
                flag += "[=BOOL]"
            default = action.default
            if default in (None, "", argparse.SUPPRESS):
                shown = ""
            elif isinstance(default, bool):
                shown = str(default).lower()
            elif isinstance(default, float):
                shown = format(default, "g")
            else:
                shown = str(default)
            text = re.sub(r"\s*\(default [^)]*\)$", "", action.help or "")
            if action.choices:
                text = (text + "; " if text else "") + "one of " + ", ".join(str(c) for c in action.choices)
            if isinstance(action, argparse._VersionAction):
                text = "print the version and exit"
            lines.append(f"| `{flag}` | {f'`{shown}`' if shown else ''} | {cell(text)} |")
    return "\n".join(lines)


NIC_BEGIN = "<!-- nic-flags:begin (generated from ingressctl.nic_flags) -->"
NIC_END = "<!-- nic-flags:end -->"


def nic_flag_table() -> str:
    """The Markdown table of the NIC flags ingressctl refuses unless their value leaves the feature off."""
    from ingressctl.nic_flags import ANY, UNSUPPORTED_FLAGS

    lines = ["| NIC flag | accepted | why not more |", "| --- | --- | --- |"]
    for name, flag in sorted(UNSUPPORTED_FLAGS.items()):
        if flag.accepts == ANY:
            accepted = "any value"
        else:
            accepted = ", ".join(f"`{v}`" if v else "empty" for v in flag.accepts)
        if flag.warns:
            accepted += ", " + ", ".join(f"`{v}` (with a warning)" for v in flag.warns)
        lines.append(f"| `-{name}` | {accepted} | {flag.reason} |")
    return "\n".join(lines)


POLICY_BEGIN = "<!-- policy-types:begin (generated from ingressctl.policies.POLICY_TYPES) -->"
POLICY_END = "<!-- policy-types:end -->"


def policy_type_table() -> str:
    """The Markdown table of the Policy types, in NIC's order, from their `PolicyType` entries."""
    from ingressctl.policies import POLICY_TYPES

    lines = ["| type | fields (default) | NGINX |", "| --- | --- | --- |"]
    lines += [f"| `{t.key}` | {t.fields_doc} | {t.nginx_doc} |" for t in POLICY_TYPES]
    return "\n".join(lines)


def readme_flag_block(text: str, begin: str = BEGIN, end: str = END) -> str:
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[start:stop].strip()


def test_readme_flag_table_matches_the_parser() -> None:
    assert readme_flag_block(read("README.md")) == flag_table(), \
        "README flag table is stale: run python -m tests.integration.test_app_docs --write"


def test_readme_lists_every_refused_nic_flag() -> None:
    assert readme_flag_block(read("README.md"), NIC_BEGIN, NIC_END) == nic_flag_table(), \
        "README NIC flag table is stale: run python -m tests.integration.test_app_docs --write"


def test_the_policy_docs_list_every_policy_type() -> None:
    assert readme_flag_block(read("docs/policies.md"), POLICY_BEGIN, POLICY_END) == policy_type_table(), \
        "docs/policies.md's type table is stale: run python -m tests.integration.test_app_docs --write"


def test_readme_commands_work_without_an_activated_venv() -> None:
    """Every Python command the README shows runs the venv's interpreter, which `make` creates."""
    commands = [c.strip("`") for c in re.findall(r"(\S*python3?) -m ingressctl", read("README.md"))]
    assert commands and all(c == ".venv/bin/python" for c in commands), commands


def test_docs_name_no_file_outside_the_repository() -> None:
    """The project documents itself: its architecture is docs/architecture.md, whose module map names only
    modules that exist; no file points at a design document the repository does not have."""
    text = read("docs/architecture.md")
    package = os.path.join(REPO, "ingressctl")
    modules = {os.path.relpath(os.path.join(d, f), package)
               for d, _, files in os.walk(package) for f in files if f.endswith(".py")}
    for module in re.findall(r"`((?:\w+/)+\w+\.py)`", text):
        if module.split("/")[0] in ("tests", "benchmarks", "scripts"):
            assert os.path.exists(os.path.join(REPO, module)), module
        else:
            assert module.removeprefix("ingressctl/") in modules, module
    for mod in re.findall(r"`(\w+\.py)`", text):
        assert any(os.path.basename(m) == mod for m in modules), mod
    offenders = []
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "node_modules")]
        for name in files:
            if name.endswith((".py", ".md", ".yaml", ".j2", ".sh", ".txt", ".tpl", ".json")) or name in (
                    "Makefile", "Dockerfile"):
                with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                    if "DESIGN" + ".md" in f.read():
                        offenders.append(os.path.relpath(os.path.join(root, name), REPO))
    assert offenders == [], offenders


def table_names(doc: str) -> set[str]:
    """The backticked names in the first column of every Markdown table row."""
    return {m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", read(doc), re.MULTILINE)}


def supported_annotations() -> set[str]:
    from ingressctl.kinds.ingress.annotations_nginx_org import NGINX_ORG

    return set(NGINX_ORG.by_key)


def test_annotation_docs_tables_match_the_annotation_table() -> None:
    """Each generated block of docs/annotations.md (one table per section, and the mergeable lists) is what
    the rows of the annotation table make of it now."""
    from ingressctl.kinds.ingress.annotation_docs import blocks, read_blocks
    from ingressctl.kinds.ingress.annotations_nginx_org import NGINX_ORG

    assert read_blocks(read("docs/annotations.md"), NGINX_ORG) == blocks(NGINX_ORG), \
        "docs/annotations.md tables are stale: run python -m tests.integration.test_app_docs --write"


def test_ingress_nginx_migration_tables_match_the_table() -> None:
    """docs/ingress-nginx-migration.md's tables are what the ingress-nginx table's rows make of them, and list
    every row once."""
    from ingressctl.kinds.ingress.annotations_ingress_nginx import INGRESS_NGINX, PREFIX
    from ingressctl.kinds.ingress.ingress_nginx.docs import blocks, read_blocks

    text = read("docs/ingress-nginx-migration.md")
    assert read_blocks(text, INGRESS_NGINX) == blocks(INGRESS_NGINX), (
        "docs/ingress-nginx-migration.md tables are stale: run python -m tests.integration.test_app_docs "
        "--write")
    annotations = text.split("## ConfigMap keys", 1)[0]
    listed = [PREFIX + m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", annotations, re.MULTILINE)]
    assert sorted(listed) == sorted(INGRESS_NGINX.by_key)


CM_BEGIN = ("<!-- ingress-nginx:configmap:begin (generated from "
            "ingressctl.kinds.ingress.ingress_nginx.configmap) -->")
CM_END = "<!-- ingress-nginx:configmap:end -->"


def configmap_docs_table() -> str:
    from ingressctl.kinds.ingress.ingress_nginx.configmap import docs_table

    return docs_table()


def test_ingress_nginx_configmap_table_matches_the_key_table() -> None:
    text = read("docs/ingress-nginx-migration.md")
    block = text[text.index(CM_BEGIN) + len(CM_BEGIN):text.index(CM_END)].strip()
    assert block == configmap_docs_table(), (
        "docs/ingress-nginx-migration.md's ConfigMap table is stale: run python -m "
        "tests.integration.test_app_docs "
        "--write")


def test_every_supported_annotation_is_documented_and_nothing_else() -> None:
    documented = table_names("docs/annotations.md") - {"kubernetes.io/ingress.class"}
    assert sorted(supported_annotations() - documented) == [], "annotations missing from docs/annotations.md"
    assert sorted(documented - supported_annotations()) == [], "docs/annotations.md lists unknown annotations"


def test_every_configmap_key_is_documented_and_nothing_else() -> None:
    from ingressctl.configs.configmaps import CONFIG_MAP_KEYS
    from ingressctl.controller.controller import EXTERNAL_STATUS_ADDRESS_KEY

    keys = set(CONFIG_MAP_KEYS) | {EXTERNAL_STATUS_ADDRESS_KEY}
    documented = table_names("docs/configmap.md")
    assert sorted(keys - documented) == [], "ConfigMap keys missing from docs/configmap.md"
    assert sorted(documented - keys) == [], "docs/configmap.md lists unknown keys"


def test_every_metric_is_documented() -> None:
    """Every family the controller registers (latency included) is in docs/metrics.md, and the reverse."""
    from ingressctl.metrics import ControllerMetrics
    from ingressctl.nginx.stub_status import StubStatus

    def fetch() -> StubStatus:
        return StubStatus(connections_active=1, connections_accepted=1, connections_handled=1,
                          connections_reading=0, connections_writing=1, connections_waiting=0,
                          http_requests_total=1)

    from ingressctl.k8s.workqueue import RateLimitingQueue

    names: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="ic-docs-") as run_dir:
        m = ControllerMetrics("nginx", run_dir=run_dir, port=0, enable_latency=True, stub_status_fetch=fetch,
                              master_pid=lambda: None)
        RateLimitingQueue[str](name="taskQueue", metrics_provider=m.workqueue)   # its series now exist
        m.watch_api_permissions(dict)     # as App wires it to its client's permission denials
        m.watch_ingress_nginx_annotations(list)  # as App wires it with --ingress-nginx-compat
        for family in m.registry.collect():
            samples = {re.sub(r"_(bucket|count|sum|created)$", "", s.name) for s in family.samples
                       if not s.name.endswith("_created")}
            names |= samples or {family.name + ("_total" if family.type == "counter" else "")}
    documented = table_names("docs/metrics.md")
    assert sorted(names - documented) == [], "metrics missing from docs/metrics.md"
    assert sorted(documented - names) == [], "docs/metrics.md lists unknown metrics"


def test_snippets_without_the_flag_are_documented_as_the_code_behaves() -> None:
    """docs/annotations.md says what validation does to a snippet annotation without --enable-snippets: the
    Ingress is rejected with the message it quotes (NIC's behaviour), not ignored with a warning."""
    from ingressctl.kinds.ingress import annotations
    from ingressctl.kinds.ingress.validation import validate_ingress

    ing = {"metadata": {"name": "a", "namespace": "d", "annotations": {"nginx.org/server-snippets": "x;"}},
           "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.example.com", "http": {"paths": [
               {"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}}]}}
    errors = [str(e) for e in validate_ingress(ing, snippets_enabled=False)]
    assert errors, "an Ingress with a snippet and snippets off must be rejected"
    section = read("docs/annotations.md").split("## Snippets", 1)[1].split("\n## ", 1)[0]
    words = " ".join(section.split())
    assert "is rejected" in words and "ignored" not in words
    assert errors[0] in words, (errors, words)
    doc = " ".join((annotations.__doc__ or "").split())
    assert "otherwise they are ignored with a warning" not in doc and "rejects the whole Ingress" in doc


CURL = re.compile(r"^curl -H 'Host: ([^']+)' http://127\.0\.0\.1:(\d+)(/\S*)\s*(?:#\s*(.*))?$", re.MULTILINE)
CURL_TLS = re.compile(r"^curl -k (?:--resolve ([^:\s]+):\d+:127\.0\.0\.1 https://[^/\s]+|https://127\.0\.0\.1:\d+)"
                      r"(/\S*)\s*#\s*(.*)$", re.MULTILINE)


@pytest.mark.integration
def test_readme_demo_curl_lines_work_against_the_demo() -> None:
    """Each curl line of the README, sent to the demo (started here on free ports instead of the README's),
    gets what its comment says: the named backend, or the status code."""
    from ingressctl.demo.run import DEFAULT_EXAMPLES, Demo, manifest_files

    lines = CURL.findall(read("README.md"))
    tls_lines = CURL_TLS.findall(read("README.md"))
    assert len(lines) >= 4, "the README should show the demo's curl lines"
    assert len(tls_lines) >= 2, "the README should show the demo's HTTPS curl lines"
    assert len({port for _, port, _, _ in lines}) == 1, "all README curl lines use the demo's one HTTP port"
    run_dir = tempfile.mkdtemp(prefix="ic-readme-", dir="/tmp")
    demo = Demo(run_dir=run_dir, manifests=manifest_files([DEFAULT_EXAMPLES]), http_port=free_port(),
                https_port=free_port())
    try:
        demo.start()
        for host, _, path, comment in lines:
            expect = comment.strip()
            if expect.isdigit():
                wait_until(lambda h=host, p=path, e=int(expect): http_get(demo.http_port, h, p).status == e,
                           f"{host}{path} -> {expect}")
            else:
                def ok(h: str = host, p: str = path) -> Any:
                    x = http_get(demo.http_port, h, p)
                    return x.status == 200 and x

                r = wait_until(ok, f"{host}{path} -> 200")
                assert r.backend == expect, f"{host}{path}: backend {r.backend!r}, README says {expect!r}"
        for host, path, comment in tls_lines:   # "" host: no SNI, the default server
            expect = comment.strip()
            r = wait_until(lambda h=host or "127.0.0.1", p=path: https_get(demo.https_port, h, p),
                           f"https {host}{path}")
            if expect.isdigit():
                assert r.status == int(expect), (host, path, r.status)
            else:
                assert r.status == 200 and r.backend == expect, (host, path, r.status, r.backend)
    finally:
        demo.stop()
        import shutil

        shutil.rmtree(run_dir, ignore_errors=True)


def _write() -> None:
    from ingressctl.kinds.ingress.annotation_docs import replace_blocks
    from ingressctl.kinds.ingress.annotations_nginx_org import NGINX_ORG

    text = read("README.md")
    for begin, end, table in ((BEGIN, END, flag_table()), (NIC_BEGIN, NIC_END, nic_flag_table())):
        start, stop = text.index(begin) + len(begin), text.index(end)
        text = text[:start] + "\n" + table + "\n" + text[stop:]
    with open(README, "w", encoding="utf-8") as f:
        f.write(text)
    policies = read("docs/policies.md")
    start, stop = policies.index(POLICY_BEGIN) + len(POLICY_BEGIN), policies.index(POLICY_END)
    with open(os.path.join(REPO, "docs", "policies.md"), "w", encoding="utf-8") as f:
        f.write(policies[:start] + "\n" + policy_type_table() + "\n" + policies[stop:])
    docs = replace_blocks(read("docs/annotations.md"), NGINX_ORG)
    with open(os.path.join(REPO, "docs", "annotations.md"), "w", encoding="utf-8") as f:
        f.write(docs)
    from ingressctl.kinds.ingress.annotations_ingress_nginx import INGRESS_NGINX
    from ingressctl.kinds.ingress.ingress_nginx import docs as ingress_nginx_docs

    migration = ingress_nginx_docs.replace_blocks(read("docs/ingress-nginx-migration.md"), INGRESS_NGINX)
    start = migration.index(CM_BEGIN) + len(CM_BEGIN)
    migration = migration[:start] + "\n" + configmap_docs_table() + "\n" + migration[migration.index(CM_END):]
    with open(os.path.join(REPO, "docs", "ingress-nginx-migration.md"), "w", encoding="utf-8") as f:
        f.write(migration)
    print("README.md flag tables, docs/policies.md's type table and docs/annotations.md's tables updated")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        _write()
    else:
        print(flag_table())
