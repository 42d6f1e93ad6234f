"""devcluster serves CustomResourceDefinitions as kube-apiserver does, driven by kubectl (the one on PATH).

The chart's k8s.nginx.org CRDs are applied with kubectl; VirtualServers are then created, read, listed,
patched (main resource and /status), shown with their printer columns, refused with a 422 naming the field,
pruned, defaulted and deleted; NIC-shaped manifests apply unchanged; deleting a CRD removes its objects and
its discovery entry. Each test uses its own devcluster and kubectl cache directory, so discovery is never
served from another test's cache. Built-in kinds are refused (422) where kube-apiserver refuses them.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ingressctl.devcluster import DevCluster
from tests.helpers import contained, wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "charts" / "ingressctl" / "crds"
SHAPES = Path(__file__).parent / "data" / "nic-custom-resources.yaml"


class Kubectl:
    def __init__(self, cluster: DevCluster, tmp: Path) -> None:
        self.cluster = cluster
        self.kubeconfig = cluster.write_kubeconfig(str(tmp / "kubeconfig"))
        self.cache = str(tmp / "cache")

    def run(self, *args: str, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig, "--cache-dir", self.cache, *args],
                              input=stdin, capture_output=True, text=True, timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
        return proc

    def json(self, *args: str) -> Any:
        return json.loads(self.run("get", "-o", "json", *args).stdout)

    def apply(self, doc: dict[str, Any] | str, check: bool = True) -> subprocess.CompletedProcess[str]:
        text = doc if isinstance(doc, str) else yaml.safe_dump(doc)
        return self.run("apply", "-f", "-", stdin=text, check=check)


@pytest.fixture
def kubectl(tmp_path: Path) -> Iterator[Kubectl]:
    with DevCluster(bookmark_interval=0.2) as dc:
        yield Kubectl(dc, tmp_path)


@pytest.fixture
def crds(kubectl: Kubectl) -> Kubectl:
    out = kubectl.run("apply", "-f", str(CRDS))
    assert sorted(out.stdout.split()) == sorted(
        [f"customresourcedefinition.apiextensions.k8s.io/{p}.k8s.nginx.org" for p in
         ("globalconfigurations", "policies", "transportservers", "virtualserverroutes", "virtualservers")]
        + ["created"] * 5)
    kubectl.run("create", "namespace", "cafe")
    return kubectl


def vs(name: str = "cafe", **spec: Any) -> dict[str, Any]:
    body = {"host": f"{name}.example.com", "upstreams": [{"name": "tea", "service": "tea-svc", "port": 80}],
            "routes": [{"path": "/tea", "action": {"pass": "tea"}}], **spec}
    return {"apiVersion": "k8s.nginx.org/v1", "kind": "VirtualServer",
            "metadata": {"name": name, "namespace": "cafe", "labels": {"app": name}}, "spec": body}


CLUSTER_SCOPED = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "zones.example.com"},
    "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Zone", "plural": "zones"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object", "properties": {
                     "size": {"type": "integer", "default": 3},
                     "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}},
                 "selectableFields": [{"jsonPath": ".spec.size"}],
                 "additionalPrinterColumns": [
                     {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]}]}}


def test_cluster_scoped_custom_resources(kubectl: Kubectl) -> None:
    kubectl.apply(CLUSTER_SCOPED)
    for name in ("north", "south"):
        kubectl.apply({"apiVersion": "example.com/v1", "kind": "Zone", "metadata": {"name": name},
                       "spec": {"config": {"anything": {"goes": [1, "two"]}}}})
    kubectl.run("patch", "zone", "south", "--type=merge", "-p", '{"spec":{"size":5}}')
    got = kubectl.json("zones", "north")
    assert "namespace" not in got["metadata"]
    assert got["spec"] == {"size": 3, "config": {"anything": {"goes": [1, "two"]}}}   # kept, and defaulted
    assert [line.split() for line in kubectl.run("get", "zones").stdout.splitlines()] == [
        ["NAME", "SIZE"], ["north", "3"], ["south", "5"]]
    selected = kubectl.run("get", "zones", "--field-selector", "spec.size=5", "-o", "name").stdout.split()
    assert selected == ["zone.example.com/south"]                               # a selectable field
    namespaced = kubectl.run("get", "zones", "-n", "default", "-o", "name").stdout.split()
    assert namespaced == ["zone.example.com/north", "zone.example.com/south"]    # -n is ignored, as for nodes
    assert kubectl.run("delete", "zones", "--all").stdout.count("deleted") == 2
    assert kubectl.run("get", "zones").stderr.strip() == "No resources found"


def test_chart_crds_are_established_with_their_names(crds: Kubectl) -> None:
    out = crds.run("wait", "--for", "condition=established", "--timeout=10s", "-f", str(CRDS))
    assert out.stdout.count("condition met") == 5
    crd = crds.json("crd", "virtualservers.k8s.nginx.org")
    conditions = {c["type"]: (c["status"], c["reason"]) for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": ("True", "NoConflicts"),
                          "Established": ("True", "InitialNamesAccepted")}
    assert crd["status"]["acceptedNames"] == {"kind": "VirtualServer", "listKind": "VirtualServerList",
                                              "plural": "virtualservers", "singular": "virtualserver",
                                              "shortNames": ["vs"]}
    assert crd["status"]["storedVersions"] == ["v1"]
    lines = crds.run("api-resources", "--api-group=k8s.nginx.org", "--no-headers").stdout.splitlines()
    assert sorted(line.split()[:2] for line in lines) == [
        ["globalconfigurations", "gc"], ["policies", "pol"], ["transportservers", "ts"],
        ["virtualserverroutes", "vsr"], ["virtualservers", "vs"]]
    # Re-applying changes nothing.
    again = crds.run("apply", "-f", str(CRDS)).stdout.splitlines()
    assert all(line.endswith("unchanged") for line in again), again


def test_discovery_finds_a_new_kind_without_restart(kubectl: Kubectl) -> None:
    missing = kubectl.run("get", "vs", "-A", check=False)
    assert missing.returncode != 0 and 'the server doesn\'t have a resource type "vs"' in missing.stderr
    kubectl.run("apply", "-f", str(CRDS / "k8s.nginx.org_virtualservers.yaml"))
    # Same kubectl cache directory: kubectl refreshes discovery on an unknown type, as with a real cluster.
    assert kubectl.run("get", "vs", "-A").stderr.strip() == "No resources found"
    assert kubectl.run("get", "virtualservers.k8s.nginx.org", "-A").returncode == 0


def test_create_get_list_patch_delete_a_virtualserver(crds: Kubectl) -> None:
    assert crds.apply(vs()).stdout.strip() == "virtualserver.k8s.nginx.org/cafe created"
    assert crds.apply(vs("tea")).returncode == 0
    got = crds.json("vs", "cafe", "-n", "cafe")
    assert got["kind"] == "VirtualServer" and got["apiVersion"] == "k8s.nginx.org/v1"
    assert got["metadata"]["generation"] == 1 and "status" not in got
    assert got["spec"]["upstreams"] == [{"name": "tea", "service": "tea-svc", "port": 80}]
    listed = crds.json("virtualservers", "-n", "cafe", "-l", "app=tea")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["tea"]
    paged = crds.json("vs", "-A", "--chunk-size=1")["items"]
    assert [i["metadata"]["name"] for i in paged] == ["cafe", "tea"]
    selected = crds.json("vs", "-n", "cafe", "--field-selector", "metadata.name=cafe")["items"]
    assert [i["spec"]["host"] for i in selected] == ["cafe.example.com"]
    crds.run("patch", "vs", "cafe", "-n", "cafe", "--type=merge", "-p", '{"spec":{"host":"new.example.com"}}')
    got = crds.json("vs", "cafe", "-n", "cafe")
    assert got["spec"]["host"] == "new.example.com" and got["metadata"]["generation"] == 2
    crds.run("patch", "vs", "cafe", "-n", "cafe", "--type=json",
             "-p", '[{"op":"replace","path":"/spec/upstreams/0/port","value":8080}]')
    assert crds.json("vs", "cafe", "-n", "cafe")["spec"]["upstreams"][0]["port"] == 8080
    changed = vs()
    changed["spec"]["routes"][0]["path"] = "/coffee"
    assert crds.apply(changed).stdout.strip() == "virtualserver.k8s.nginx.org/cafe configured"
    assert crds.json("vs", "cafe", "-n", "cafe")["spec"]["routes"][0]["path"] == "/coffee"
    assert crds.run("delete", "vs", "cafe", "-n", "cafe").stdout.strip() == \
        'virtualserver.k8s.nginx.org "cafe" deleted'
    assert [i["metadata"]["name"] for i in crds.json("vs", "-n", "cafe")["items"]] == ["tea"]
    gone = crds.run("get", "vs", "cafe", "-n", "cafe", check=False)
    assert 'virtualservers.k8s.nginx.org "cafe" not found' in gone.stderr


def test_watch_with_kubectl(crds: Kubectl) -> None:
    proc = subprocess.Popen(["kubectl", "--kubeconfig", crds.kubeconfig, "--cache-dir", crds.cache, "get",
                             "vs", "-n", "cafe", "-w", "--output-watch-events", "-o", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout

    def read() -> None:
        for line in stdout:        # with --output-watch-events, one compact JSON event per line
            if line.strip():
                events.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        wait_until(lambda: crds.cluster.store.watcher_count() > 0, "kubectl watching")
        crds.apply(vs())
        crds.run("patch", "vs", "cafe", "-n", "cafe", "--type=merge", "-p", '{"spec":{"gunzip":true}}')
        crds.run("delete", "vs", "cafe", "-n", "cafe")
        seen = [json.loads(events.get(timeout=30)) for _ in range(3)]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [
        ("ADDED", "cafe"), ("MODIFIED", "cafe"), ("DELETED", "cafe")]
    assert seen[1]["object"]["spec"]["gunzip"] is True


def test_printer_columns_in_kubectl_get(crds: Kubectl) -> None:
    crds.apply(vs())
    crds.run("patch", "vs", "cafe", "-n", "cafe", "--subresource=status", "--type=merge", "-p", json.dumps(
        {"status": {"state": "Valid", "reason": "AddedOrUpdated",
                    "message": "Configuration for cafe/cafe was added or updated ", "externalEndpoints": [
                        {"ip": "192.0.2.10", "hostname": "lb.example.com", "ports": "[80,443]"}]}}))
    rows = [line.split() for line in crds.run("get", "vs", "-n", "cafe").stdout.splitlines()]
    assert rows[0] == ["NAME", "STATE", "HOST", "IP", "PORTS", "AGE"]
    assert rows[1][:5] == ["cafe", "Valid", "cafe.example.com", "192.0.2.10", "[80,443]"]
    assert rows[1][5].endswith("s")       # an age, e.g. "0s"
    wide = [line.split() for line in crds.run("get", "vs", "-n", "cafe", "-o", "wide").stdout.splitlines()]
    assert wide[0] == ["NAME", "STATE", "HOST", "IP", "EXTERNALHOSTNAME", "PORTS", "AGE"]
    assert wide[1][4] == "lb.example.com"
    crds.apply({"apiVersion": "k8s.nginx.org/v1", "kind": "GlobalConfiguration",
                "metadata": {"name": "gc", "namespace": "cafe"}, "spec": {"listeners": []}})
    assert crds.run("get", "gc", "-n", "cafe").stdout.split()[:2] == ["NAME", "AGE"]   # no columns: Name, Age
    assert crds.run("get", "crd", "policies.k8s.nginx.org").stdout.split()[:3] == ["NAME", "CREATED", "AT"]


def test_status_subresource_is_isolated_from_the_main_resource(crds: Kubectl) -> None:
    body = vs()
    body["status"] = {"state": "Valid"}
    crds.apply(body)
    assert "status" not in crds.json("vs", "cafe", "-n", "cafe")        # create ignores status
    crds.run("patch", "vs", "cafe", "-n", "cafe", "--type=merge", "-p", '{"status":{"state":"Invalid"}}')
    assert "status" not in crds.json("vs", "cafe", "-n", "cafe")        # the main resource ignores status
    crds.run("patch", "vs", "cafe", "-n", "cafe", "--subresource=status", "--type=merge",
             "-p", '{"spec":{"host":"other.example.com"},"status":{"state":"Warning"}}')
    got = crds.json("vs", "cafe", "-n", "cafe")
    assert got["status"] == {"state": "Warning"}                        # /status ignores the spec
    assert got["spec"]["host"] == "cafe.example.com" and got["metadata"]["generation"] == 1
    bad = crds.run("patch", "vs", "cafe", "-n", "cafe", "--subresource=status", "--type=merge",
                   "-p", '{"status":{"state":7}}', check=False)
    assert bad.returncode != 0
    assert 'status.state: Invalid value: "integer": status.state in body must be of type string: "integer"' \
        in bad.stderr
    # A GlobalConfiguration has no /status: its status is not even a known field.
    gc_status = crds.run("patch", "gc", "x", "-n", "cafe", "--subresource=status", "--type=merge", "-p", "{}",
                         check=False)
    assert gc_status.returncode != 0


def test_a_bad_field_is_refused_with_422_naming_the_field(crds: Kubectl) -> None:
    bad = vs()
    bad["spec"]["upstreams"][0]["port"] = "string"
    out = crds.apply(bad, check=False)
    assert out.returncode == 1
    assert out.stderr.strip() == (
        'The VirtualServer "cafe" is invalid: spec.upstreams[0].port: Invalid value: "string": '
        'spec.upstreams[0].port in body must be of type integer: "string"')
    assert crds.json("vs", "-n", "cafe")["items"] == []
    crds.apply(vs())
    patched = crds.run("patch", "vs", "cafe", "-n", "cafe", "--type=merge",
                       "-p", '{"spec":{"add-header-inherit":"sometimes","gunzip":"yes"}}', check=False)
    assert patched.returncode == 1
    assert 'The VirtualServer "cafe" is invalid: \n' in patched.stderr      # kubectl's multi-error form
    assert '* spec.add-header-inherit: Unsupported value: "sometimes": supported values: "on", "off", ' \
        '"merge"' in patched.stderr
    assert '* spec.gunzip: Invalid value: "string": spec.gunzip in body must be of type boolean: "string"' \
        in patched.stderr
    policy = {"apiVersion": "k8s.nginx.org/v1", "kind": "Policy",
              "metadata": {"name": "c", "namespace": "cafe"},
              "spec": {"cache": {"cacheZoneName": "Bad-Zone", "cacheZoneSize": "10m"}}}
    out = crds.apply(policy, check=False)
    assert "spec.cache.cacheZoneName: Invalid value: \"Bad-Zone\": spec.cache.cacheZoneName in body should " \
        "match '^[a-z][a-zA-Z0-9_]*[a-zA-Z0-9]$|^[a-z]$'" in out.stderr
    del policy["spec"]["cache"]["cacheZoneSize"]
    policy["spec"]["cache"]["cacheZoneName"] = "zone"
    assert "spec.cache.cacheZoneSize: Required value" in crds.apply(policy, check=False).stderr


def test_unknown_fields_are_refused_by_strict_validation_else_pruned(crds: Kubectl) -> None:
    body = vs(tls={"secret": "cafe-secret", "redirect": {"enable": True}, "colour": "blue"})
    body["spec"]["bogus"] = {"deep": 1}
    redirect = {"redirect": {"url": "https://x.example.com"}}
    body["spec"]["routes"].append({"path": "/old", "action": redirect, "weight": 3})
    body["metadata"]["bogus"] = "x"
    # kubectl asks for strict field validation by default: the API server refuses unknown fields (400).
    strict = crds.apply(body, check=False)
    assert strict.returncode == 1
    assert strict.stderr.strip() == (
        'Error from server (BadRequest): error when creating "STDIN": VirtualServer in version "v1" cannot '
        'be handled as a VirtualServer: strict decoding error: unknown field "metadata.bogus", unknown '
        'field "spec.bogus", unknown field "spec.routes[1].weight", unknown field "spec.tls.colour"')
    assert crds.json("vs", "-n", "cafe")["items"] == []
    # Warn: accepted and pruned, one warning per field; Ignore (--validate=false): pruned silently.
    warn = crds.run("apply", "--validate=warn", "-f", "-", stdin=yaml.safe_dump(body))
    assert warn.stderr.splitlines() == [
        'Warning: unknown field "metadata.bogus"', 'Warning: unknown field "spec.bogus"',
        'Warning: unknown field "spec.routes[1].weight"', 'Warning: unknown field "spec.tls.colour"']
    crds.run("delete", "vs", "cafe", "-n", "cafe")
    ignored = crds.run("apply", "--validate=false", "-f", "-", stdin=yaml.safe_dump(body))
    assert ignored.stderr == ""
    got = crds.json("vs", "cafe", "-n", "cafe")
    assert "bogus" not in got["spec"] and "colour" not in got["spec"]["tls"]
    assert "weight" not in got["spec"]["routes"][1] and "bogus" not in got["metadata"]
    assert got["spec"]["tls"]["redirect"] == {"enable": True, "code": 301}          # defaulted
    assert got["spec"]["routes"][1]["action"]["redirect"] == {"url": "https://x.example.com", "code": 301}
    # An explicit value wins over the default.
    crds.run("patch", "vs", "cafe", "-n", "cafe", "--type=merge",
             "-p", '{"spec":{"tls":{"redirect":{"code":307}}}}')
    assert crds.json("vs", "cafe", "-n", "cafe")["spec"]["tls"]["redirect"]["code"] == 307


def test_nic_shaped_manifests_apply_unchanged(crds: Kubectl) -> None:
    docs = [d for d in yaml.safe_load_all(SHAPES.read_text()) if d]
    crds.run("create", "namespace", "nic-shapes")
    out = crds.run("apply", "-f", str(SHAPES)).stdout.splitlines()
    assert len(out) == len(docs) and all(line.endswith(" created") for line in out), out
    for doc in docs:
        stored = crds.json(doc["kind"].lower(), doc["metadata"]["name"], "-n", "nic-shapes")
        assert contained(doc["spec"], stored["spec"]), doc["metadata"]["name"]        # nothing pruned
        assert contained(stored["spec"], doc["spec"]) or doc["kind"] == "VirtualServer", stored["spec"]
    assert crds.run("apply", "-f", str(SHAPES)).stdout.count("unchanged") == len(docs)
    rows = crds.run("get", "vs,vsr,ts,pol,gc", "-n", "nic-shapes", "--no-headers").stdout.splitlines()
    assert len(rows) == len(docs)


def test_manifests_loaded_at_start_may_hold_crds_and_their_objects(tmp_path: Path) -> None:
    with DevCluster(manifests=[str(CRDS), str(SHAPES)]) as dc:
        k = Kubectl(dc, tmp_path)
        names = k.run("get", "vs,ts,gc", "-n", "nic-shapes", "-o", "name").stdout.split()
        assert names == ["virtualserver.k8s.nginx.org/cafe", "transportserver.k8s.nginx.org/dns-tcp",
                         "transportserver.k8s.nginx.org/secure-app",
                         "globalconfiguration.k8s.nginx.org/nginx-configuration"]


def test_kubectl_explain_describes_custom_resources(crds: Kubectl) -> None:
    crds.run("api-resources")   # unlike get, explain does not refresh kubectl's discovery cache on a miss
    out = crds.run("explain", "vs").stdout
    assert "KIND:       VirtualServer" in out and "VERSION:    v1" in out
    assert "VirtualServer defines the configuration of one virtual server" in out
    port = crds.run("explain", "virtualservers.spec.upstreams.port").stdout
    assert "FIELD: port <integer>" in port
    hosts = crds.run("explain", "policies.spec.cors.allowOrigin").stdout
    assert "FIELD: allowOrigin <[]string>" in hosts
    # Built-in kinds have no document: kubectl says so, as before.
    assert crds.run("explain", "ingresses", check=False).returncode != 0


def test_plain_manifest_applies(kubectl: Kubectl) -> None:
    out = kubectl.run("apply", "-f", str(ROOT / "deployments" / "crds.yaml")).stdout.splitlines()
    assert len(out) == 5 and all(line.endswith(" created") for line in out)
    assert kubectl.run("get", "vs,vsr,ts,pol,gc", "-A").stderr.strip() == "No resources found"


def test_deleting_a_crd_removes_its_objects_and_discovery(crds: Kubectl) -> None:
    crds.apply(vs())
    crds.apply(vs("tea"))
    before = crds.cluster.store.resource_version
    assert crds.run("delete", "crd", "virtualservers.k8s.nginx.org").returncode == 0
    assert crds.cluster.registry.by_path("k8s.nginx.org", "v1", "virtualservers") is None
    resources = crds.run("api-resources", "--api-group=k8s.nginx.org", "--no-headers").stdout
    assert "virtualservers" not in resources and "virtualserverroutes" in resources
    out = crds.run("get", "vs", "-A", check=False)     # the refreshed discovery cache no longer knows it
    assert out.returncode != 0 and 'the server doesn\'t have a resource type "vs"' in out.stderr
    assert crds.run("get", "vsr", "-A").returncode == 0         # the other kinds of the group stay
    # The CRD marked for deletion, both objects deleted, the CRD deleted: one event each.
    assert crds.cluster.store.resource_version == before + 4
    # Re-created, the kind starts empty.
    crds.run("apply", "-f", str(CRDS / "k8s.nginx.org_virtualservers.yaml"))
    assert crds.json("vs", "-A")["items"] == []


def test_crd_validation_and_name_conflicts(crds: Kubectl) -> None:
    bad = yaml.safe_load((CRDS / "k8s.nginx.org_globalconfigurations.yaml").read_text())
    bad["metadata"]["name"] = "wrong.k8s.nginx.org"
    del bad["spec"]["versions"][0]["schema"]
    out = crds.apply(bad, check=False)
    assert out.returncode == 1
    assert 'metadata.name: Invalid value: "wrong.k8s.nginx.org": must be spec.names.plural+"."+spec.group' \
        in out.stderr
    assert "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required" in out.stderr
    clash = yaml.safe_load((CRDS / "k8s.nginx.org_globalconfigurations.yaml").read_text())
    clash["metadata"]["name"] = "globalconfigs.k8s.nginx.org"
    clash["spec"]["names"].update(plural="globalconfigs", singular="globalconfig", shortNames=["gcs"])
    crds.apply(clash)
    status = crds.json("crd", "globalconfigs.k8s.nginx.org")["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["NamesAccepted"]["status"], conditions["NamesAccepted"]["reason"]) == \
        ("False", "KindConflict")
    assert conditions["NamesAccepted"]["message"] == '"GlobalConfiguration" is already in use'
    assert conditions["Established"]["status"] == "False"
    assert crds.cluster.registry.by_path("k8s.nginx.org", "v1", "globalconfigs") is None


# ------------------------------------------------------------------------------------------ built-in kinds
def ingress(path: dict[str, Any], host: str = "cafe.example.com") -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "ing", "namespace": "cafe"},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": host, "http": {"paths": [path]}}]}}


GOOD_BACKEND = {"service": {"name": "tea", "port": {"number": 80}}}


@pytest.mark.parametrize("body, message", [
    (ingress({"path": "tea", "pathType": "Prefix", "backend": GOOD_BACKEND}),
     'The Ingress "ing" is invalid: spec.rules[0].http.paths[0].path: Invalid value: "tea": must be an '
     'absolute path'),
    (ingress({"path": "/", "pathType": "Prefix", "backend": GOOD_BACKEND}, host="cafe.*.example.com"),
     'The Ingress "ing" is invalid: spec.rules[0].host: Invalid value: "cafe.*.example.com": a wildcard '
     "DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain"),
    (ingress({"path": "/", "pathType": "Prefix", "backend": GOOD_BACKEND}, host="Cafe_Example.com"),
     'The Ingress "ing" is invalid: spec.rules[0].host: Invalid value: "Cafe_Example.com": a lowercase RFC '
     "1123 subdomain must consist of lower case alphanumeric characters"),
    (ingress({"path": "/", "pathType": "Prefix", "backend": {}}),
     'The Ingress "ing" is invalid: spec.rules[0].http.paths[0].backend: Invalid value: "": resource or '
     "service backend is required"),
    (ingress({"path": "/", "backend": GOOD_BACKEND}),
     'The Ingress "ing" is invalid: spec.rules[0].http.paths[0].pathType: Required value: pathType must be '
     "specified"),
    (ingress({"path": "/", "pathType": "Regex", "backend": GOOD_BACKEND}),
     'The Ingress "ing" is invalid: spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": '
     'supported values: "Exact", "ImplementationSpecific", "Prefix"'),
    ({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
      "metadata": {"name": "tls", "namespace": "cafe"}, "data": {"tls.crt": "eA=="}},
     'The Secret "tls" is invalid: data[tls.key]: Required value'),
])
def test_builtin_kinds_are_validated_as_kube_apiserver_does(kubectl: Kubectl, body: dict[str, Any],
                                                            message: str) -> None:
    kubectl.run("create", "namespace", "cafe")
    out = kubectl.apply(body, check=False)
    assert out.returncode == 1
    assert out.stderr.strip().startswith(message), out.stderr
    assert kubectl.run("get", body["kind"].lower(), "-n", "cafe", "--no-headers").stderr.strip() == \
        "No resources found in cafe namespace."
