"""`python -m ingressctl migrate-report --from-files`: the report of manifests in the forms users publish
(tests/unit/data/migrate-report: ingress-nginx's docs examples, a chart's rendered output, `kubectl get -o
json` output, refused and unknown annotations, an invalid value, another controller's class, the removed beta
API, objects that are not Ingresses), in text and JSON, through the real command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ingressctl.cli import parse_args
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.migrate_report.sources import read_files

DATA = Path(__file__).parent / "data" / "migrate-report"
ROOT = Path(__file__).resolve().parents[2]
N = "nginx.ingress.kubernetes.io/"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ingressctl", *args], capture_output=True, text=True,
                          cwd=ROOT, check=False)


def report(*args: str) -> dict[str, Any]:
    done = run("migrate-report", "--from-files", str(DATA), "--output", "json", *args)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{i['namespace']}/{i['name']}": i for i in doc["ingresses"]}


def statuses(ing: dict[str, Any]) -> dict[str, str]:
    return {a["key"].removeprefix(N): a["status"] for a in ing["annotations"]}


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return report()


def test_verdicts_of_published_manifests(doc: dict[str, Any]) -> None:
    ings = by_name(doc)
    assert doc["kind"] == "IngressNginxMigrationReport" and doc["version"] == 1
    assert doc["summary"]["ingresses"]["total"] == len(ings) == 14
    # A chart's rendered Ingress and kubectl's List output: served, with the IngressClass of ingress-nginx.
    assert ings["default/shop-web"]["verdict"] == "served"
    assert ings["default/shop-web"]["where"] == "chart-rendered.yaml, document 2"
    assert ings["ops/admin"]["verdict"] == "served"
    assert ings["ops/admin"]["why"] == [
        "class internal: IngressClass internal has controller k8s.io/ingress-nginx"]
    assert ings["echo/production"]["verdict"] == "served"
    # nginx.org's annotation wins, with the warning of the controller's event.
    assert ings["web/both"]["verdict"] == "served-with-warnings"
    assert ings["web/both"]["warnings"] == [
        f"annotation nginx.org/client-max-body-size wins over {N}proxy-body-size (both set "
        f"client_max_body_size); {N}proxy-body-size is ignored"]
    # No class: the default IngressClass of the files, as the API server sets it at creation.
    assert ings["default/no-redirect"]["classSource"] == "default IngressClass"
    assert ings["default/no-redirect"]["verdict"] == "served"
    # Rejected, with the errors of the Rejected event.
    assert ings["apps/any-host"]["verdict"] == "rejected"
    assert ings["apps/any-host"]["errors"] == ["spec.rules[0].host: Required value"]
    waf = ings["shop/waf"]
    assert waf["verdict"] == "rejected" and waf["classSource"] == "annotation"
    assert waf["errors"] == [
        f"annotations.{N}configuration-snippet: Forbidden: not supported by ingressctl: snippets are not "
        "enabled (--enable-snippets)",
        f"annotations.{N}enable-modsecurity: Forbidden: not supported by ingressctl: no ModSecurity in "
        "ingressctl; a WAF the author believes on must not be silently off"]
    assert ings["shop/bad-limit"]["verdict"] == "rejected"
    assert ings["shop/bad-limit"]["errors"] == [
        f'annotations.{N}limit-rps: Invalid value: "ten": must be an integer']
    # Not served, with why.
    assert ings["apps/traefik-app"]["verdict"] == "not-served"
    assert "traefik.io/ingress-controller" in ings["apps/traefik-app"]["why"][0]
    assert ings["apps/legacy"]["verdict"] == "not-served"
    assert "apiVersion extensions/v1beta1" in ings["apps/legacy"]["why"][0]
    assert ings["shop/unquoted"]["verdict"] == "not-served"
    assert f"metadata.annotations.{N}ssl-redirect: the value false is not a string" in \
        ings["shop/unquoted"]["why"][0]


def test_annotation_statuses_are_the_translators(doc: dict[str, Any]) -> None:
    ings = by_name(doc)
    shop = {a["key"].removeprefix(N): a for a in ings["default/shop-web"]["annotations"]}
    assert {k: a["status"] for k, a in shop.items()} == {
        "proxy-body-size": "translated", "proxy-read-timeout": "translated",
        "whitelist-source-range": "translated"}
    assert shop["proxy-body-size"]["effect"] == "client_max_body_size"
    assert shop["proxy-body-size"]["value"] == "50m"
    waf = {a["key"].removeprefix(N): a for a in ings["shop/waf"]["annotations"]}
    assert waf["x-made-up-annotation"]["status"] == "ignored"
    assert waf["x-made-up-annotation"]["reason"] == "not an ingress-nginx annotation ingressctl knows"
    assert waf["enable-modsecurity"]["status"] == "refused"
    assert waf["configuration-snippet"]["status"] == "refused"
    assert statuses(ings["shop/bad-limit"]) == {"limit-rps": "invalid", "proxy-body-size": "translated"}
    # Every entry, docs examples included (rewrite, auth, canary: whatever their rows say today), is what the
    # translator reports for that Ingress's annotations, and an Ingress it finds problems in is rejected.
    manifests = {f"{(f.obj['metadata'].get('namespace') or 'default')}/{f.obj['metadata']['name']}": f.obj
                 for f in read_files(str(DATA)).ingresses}
    for key, ing in ings.items():
        annotations = {k: str(v).lower() if isinstance(v, bool) else str(v)
                       for k, v in (manifests[key]["metadata"].get("annotations") or {}).items()}
        tr = translate(annotations)
        expected = {e.key.removeprefix(N): e.status.value for e in tr.report}
        expected.update({p.key.removeprefix(N): "invalid" for p in tr.problems if not p.refused})
        assert statuses(ing) == expected, key
        if tr.problems and ing["verdict"] != "not-served":
            assert ing["verdict"] == "rejected", key
            assert {p.key for p in tr.problems} <= {e.split(": ")[0].removeprefix("annotations.")
                                                    for e in ing["errors"]}, key


def test_summary_counts_every_annotation(doc: dict[str, Any]) -> None:
    counted: dict[str, dict[str, int]] = {}
    for ing in doc["ingresses"]:
        for a in ing["annotations"]:
            counted.setdefault(a["key"], {}).setdefault(a["status"], 0)
            counted[a["key"]][a["status"]] += 1
    summary = doc["summary"]["annotations"]
    assert {k: {s: n for s, n in v.items() if n} for k, v in summary.items()} == counted
    assert summary[N + "ssl-redirect"]["translated"] == 3
    assert summary[N + "proxy-body-size"]["translated"] == 3
    assert summary[N + "limit-rps"]["invalid"] == 1
    assert set(summary[N + "ssl-redirect"]) == {"served", "translated", "approximated", "ignored", "refused",
                                                "invalid"}
    verdicts = doc["summary"]["ingresses"]
    assert sum(verdicts[v] for v in ("served", "served-with-warnings", "rejected", "not-served")) == 14
    assert [(s["where"], s["kind"], s["name"]) for s in doc["skipped"]] == [
        ("chart-rendered.yaml, document 1", "Service", "shop-web"),
        ("elsewhere.yml, document 5", "Deployment", "web")]
    assert [(c["name"], c["served"], c["default"]) for c in doc["ingressClasses"]] == [
        ("internal", True, False), ("nginx", True, True), ("traefik", False, False)]


def test_json_is_stable() -> None:
    first = run("migrate-report", "--from-files", str(DATA), "-o", "json")
    second = run("migrate-report", "--from-files", str(DATA), "-o", "json")
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout
    assert first.stdout == json.dumps(json.loads(first.stdout), indent=2, sort_keys=True,
                                      ensure_ascii=False) + "\n"


def test_text_report(doc: dict[str, Any]) -> None:
    done = run("migrate-report", "--from-files", str(DATA))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("ingress-nginx migration report: 14 Ingresses from ")
    block = out.split("\nshop/waf  (refused.yaml, document 1)\n", 1)[1].split("\n\n", 1)[0]
    assert "  verdict: REJECTED" in block
    assert f"    - annotations.{N}enable-modsecurity: Forbidden: not supported by ingressctl: " in block
    assert f'    ignored  {N}x-made-up-annotation="on"\n' in block
    assert "             why: not an ingress-nginx annotation ingressctl knows" in block
    shop = out.split("\ndefault/shop-web  (chart-rendered.yaml, document 2)\n", 1)[1].split("\n\n", 1)[0]
    assert "  verdict: served\n" in shop
    assert f'    translated  {N}proxy-body-size="50m"\n                -> client_max_body_size\n' in shop
    v = doc["summary"]["ingresses"]
    assert (f"Summary: {v['served']} served, {v['served-with-warnings']} served with warnings, "
            f"{v['rejected']} rejected, {v['not-served']} not served (14 Ingresses)") in out
    assert re.search(rf"\n{re.escape(N)}proxy-body-size +\. +3 +\. +\. +\. +\.\n", out)
    assert re.search(rf"\n{re.escape(N)}limit-rps +\. +\. +\. +\. +\. +1\n", out)
    assert ("Skipped 2 other documents:\n"
            "  chart-rendered.yaml, document 1: Service shop-web: not an Ingress\n") in out


def test_controller_flags_change_the_verdicts() -> None:
    ings = by_name(report("--enable-snippets", "--allow-empty-ingress-host"))
    assert ings["apps/any-host"]["verdict"] == "served"
    waf = ings["shop/waf"]
    assert statuses(waf)["configuration-snippet"] == "served"
    assert waf["verdict"] == "rejected"  # modsecurity still refuses it
    assert [e.split(":")[0] for e in waf["errors"]] == [f"annotations.{N}enable-modsecurity"]
    other = by_name(report("--ingress-class", "internal"))
    assert other["ops/admin"]["why"] == ["class internal is the --ingress-class"]
    assert other["echo/production"]["verdict"] == "served"  # the IngressClass nginx is ingress-nginx's


def test_namespace() -> None:
    doc = report("--namespace", "shop")
    assert sorted(by_name(doc)) == ["shop/bad-limit", "shop/unquoted", "shop/waf"]
    assert doc["source"] == {"from": "files", "path": str(DATA), "namespace": "shop"}


def test_usage_errors_and_unreadable_input(tmp_path: Path) -> None:
    assert run("migrate-report").returncode == 2
    both = run("migrate-report", "--from-files", str(DATA), "--kubeconfig", str(tmp_path / "k"))
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    assert run("migrate-report", "--from-files", str(DATA), "--namespace", "Not_A_Label").returncode == 2
    assert run("migrate-report", "--from-files", str(DATA), "--output", "yaml").returncode == 2
    missing = run("migrate-report", "--from-files", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "nowhere: not a directory" in missing.stderr
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ok.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
    (tmp_path / "sub" / "broken.yml").write_text("kind: Ingress\nmetadata: [unclosed\n")
    broken = run("migrate-report", "--from-files", str(tmp_path))
    assert broken.returncode == 2 and "broken.yml: invalid YAML" in broken.stderr and not broken.stdout
    (tmp_path / "sub" / "broken.yml").unlink()
    (tmp_path / "bad.json").write_text("{\"kind\": ")
    bad_json = run("migrate-report", "--from-files", str(tmp_path))
    assert bad_json.returncode == 2 and "bad.json: invalid JSON" in bad_json.stderr
    (tmp_path / "bad.json").unlink()
    empty = run("migrate-report", "--from-files", str(tmp_path))
    assert empty.returncode == 0 and "0 Ingresses" in empty.stdout
    assert "No ingress-nginx annotations." in empty.stdout
    kubeconfig = run("migrate-report", "--kubeconfig", str(tmp_path / "missing-kubeconfig"))
    assert kubeconfig.returncode == 2 and "cannot load Kubernetes client configuration" in kubeconfig.stderr


def test_the_controller_command_line_is_unchanged() -> None:
    settings = parse_args(["--kubeconfig", "/tmp/kc", "--ingress-nginx-compat", "-ingress-class=nginx"])
    assert settings.kube.kubeconfig == "/tmp/kc" and settings.controller.ingress_nginx_compat
    helped = run("--help")
    assert helped.returncode == 0 and "migrate-report" in helped.stdout
    assert "--ingress-nginx-compat" in helped.stdout
    wrong = run("--kubeconfig", "/tmp/kc", "migrate-report")  # the subcommand only leads
    assert wrong.returncode == 2 and "unrecognized arguments: migrate-report" in wrong.stderr


ODD = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: []
spec: "x"
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: a
  annotations: {nginx.ingress.kubernetes.io/limit-rps: null, kubernetes.io/ingress.class: 5, x/y: 2024-01-01}
spec: {rules: {a: b}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: b, namespace: x, annotations: "str"}
spec: {ingressClassName: nginx, rules: [1, {host: 2}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: c, namespace: x}
spec: {ingressClassName: [nginx], rules: [{host: c.example.com, http: {paths: "no"}}]}
---
- not an object
---
kind: List
apiVersion: v1
items: [null, 3]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: d, namespace: x}
spec: {ingressClassName: nginx, rules: [{host: d.example.com, http: {paths: [{path: /, pathType: Prefix}]}}]}
"""


def test_malformed_documents_get_a_reason_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "odd.yaml").write_text(ODD)
    done = run("migrate-report", "--from-files", str(tmp_path), "-o", "json")
    assert done.returncode == 0, done.stderr
    ings = by_name(json.loads(done.stdout))
    refuses = "the API server refuses it: "
    assert ings["default/"]["why"][:3] == [
        refuses + "metadata: must be a map", refuses + "spec: must be a map",
        refuses + "metadata.name: Required value"]
    assert ings["default/a"]["why"][:4] == [
        refuses + "spec.rules: must be a list",
        refuses + "metadata.annotations.kubernetes.io/ingress.class: the value 5 is not a string: quote it "
                  "in the manifest",
        refuses + f"metadata.annotations.{N}limit-rps: the value null is not a string: quote it in the "
                  "manifest",
        refuses + 'metadata.annotations.x/y: the value "2024-01-01" is not a string: quote it in the '
                  "manifest"]
    assert ings["x/b"]["why"][0] == refuses + "metadata.annotations: must be a map of strings"
    assert ings["x/c"]["why"][0] == refuses + "spec.ingressClassName: must be a string"
    assert ings["x/d"]["verdict"] == "rejected"  # a path without a backend: the controller's validation
    assert all(i["verdict"] == "not-served" for k, i in ings.items() if k != "x/d")
    text = run("migrate-report", "--from-files", str(tmp_path))
    assert text.returncode == 0 and "Traceback" not in text.stderr
