"""kube-apiserver's write semantics that a kubectl user sees, through real kubectl against devcluster.

Secret `stringData` (as NIC's basic-auth example writes its htpasswd Secret) is merged into `data` on every
write path and never stored or shown; fields a kind does not declare are refused (`--validate=strict`, the
default), warned about (`--validate=warn`) or dropped silently (`--validate=false`), for built-in kinds and
custom resources, on create and on the patch a second `kubectl apply` sends; server-side apply refuses them
whatever the directive; immutable fields refuse an update with kube-apiserver's 422.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ingressctl.devcluster import DevCluster
from tests.integration.test_devcluster_crds_kubectl import CRDS, Kubectl, vs

pytestmark = pytest.mark.integration

HTPASSWD = "foo:$apr1$Xn0oQUXc$ba7TbmzdE4.MZsHPdXHmx/\n"


@pytest.fixture
def kubectl(tmp_path: Path) -> Iterator[Kubectl]:
    with DevCluster(bookmark_interval=0.2) as dc:
        yield Kubectl(dc, tmp_path)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def htpasswd_secret(**string_data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "htpasswd-secret", "namespace": "default"},
            "type": "nginx.org/htpasswd", "stringData": string_data or {"htpasswd": HTPASSWD}}


def stored(kubectl: Kubectl, *what: str) -> Any:
    return kubectl.json(*what, "-n", "default")


def test_string_data_is_merged_into_data_on_every_kubectl_write(kubectl: Kubectl) -> None:
    created = kubectl.run("apply", "-o", "json", "-f", "-", stdin=yaml.safe_dump(htpasswd_secret()))
    response = json.loads(created.stdout)                 # the write's own response
    assert "stringData" not in response and response["data"] == {"htpasswd": b64(HTPASSWD)}
    secret = stored(kubectl, "secret", "htpasswd-secret")
    assert "stringData" not in secret and secret["data"] == {"htpasswd": b64(HTPASSWD)}
    assert "stringData" not in stored(kubectl, "secrets")["items"][0]
    # A second apply sends a strategic merge patch of stringData: the merged data changes.
    kubectl.apply(htpasswd_secret(htpasswd="bar:x\n"))
    assert stored(kubectl, "secret", "htpasswd-secret")["data"] == {"htpasswd": b64("bar:x\n")}
    # stringData wins over data per key; other data keys stay.
    both = {**htpasswd_secret(htpasswd="baz:y\n"), "data": {"htpasswd": b64("lost"), "extra": b64("kept")}}
    kubectl.run("replace", "-f", "-", stdin=yaml.safe_dump(both))
    assert stored(kubectl, "secret", "htpasswd-secret")["data"] == {"htpasswd": b64("baz:y\n"),
                                                                   "extra": b64("kept")}
    # Each patch type.
    for patch_type, patch in (("merge", {"stringData": {"m": "merge"}}),
                              ("strategic", {"stringData": {"s": "strategic"}}),
                              ("json", [{"op": "add", "path": "/stringData", "value": {"j": "json"}}])):
        out = kubectl.run("patch", "secret", "htpasswd-secret", "-n", "default", "--type", patch_type,
                          "-p", json.dumps(patch), "-o", "json")
        assert "stringData" not in json.loads(out.stdout)
    data = stored(kubectl, "secret", "htpasswd-secret")["data"]
    assert (data["m"], data["s"], data["j"]) == (b64("merge"), b64("strategic"), b64("json"))
    # Server-side apply, creating and updating.
    doc = htpasswd_secret(htpasswd="ssa\n")
    doc["metadata"]["name"] = "ssa-secret"
    kubectl.run("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(doc))
    doc["stringData"]["second"] = "two"
    out = kubectl.run("apply", "--server-side", "-o", "json", "-f", "-", stdin=yaml.safe_dump(doc))
    assert "stringData" not in json.loads(out.stdout)
    got = stored(kubectl, "secret", "ssa-secret")
    assert "stringData" not in got and got["data"] == {"htpasswd": b64("ssa\n"), "second": b64("two")}
    assert got["type"] == "nginx.org/htpasswd"


def test_secret_data_must_be_base64(kubectl: Kubectl) -> None:
    bad = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad", "namespace": "default"},
           "data": {"k": "not base64!"}}
    out = kubectl.apply(bad, check=False)
    assert out.returncode == 1
    assert out.stderr.startswith('Error from server (BadRequest): error when creating "STDIN": Secret in '
                                 'version "v1" cannot be handled as a Secret: illegal base64 data')


def service(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}}


def test_unknown_fields_of_a_builtin_kind_by_validate_mode(kubectl: Kubectl) -> None:
    body = service(notAField=1)
    body["spec"]["ports"][0]["colour"] = "blue"
    strict = kubectl.apply(body, check=False)
    assert strict.returncode == 1
    assert strict.stderr.strip() == (
        'Error from server (BadRequest): error when creating "STDIN": Service in version "v1" cannot be '
        'handled as a Service: strict decoding error: unknown field "spec.notAField", unknown field '
        '"spec.ports[0].colour"')
    assert stored(kubectl, "services")["items"] == []
    warn = kubectl.run("apply", "--validate=warn", "-f", "-", stdin=yaml.safe_dump(body))
    assert warn.stderr.splitlines() == ['Warning: unknown field "spec.notAField"',
                                        'Warning: unknown field "spec.ports[0].colour"']
    got = stored(kubectl, "service", "web")
    assert "notAField" not in got["spec"] and "colour" not in got["spec"]["ports"][0]
    assert got["spec"]["ports"][0] == {"port": 80, "protocol": "TCP", "targetPort": 80}
    kubectl.run("delete", "service", "web", "-n", "default")
    ignored = kubectl.run("apply", "--validate=false", "-f", "-", stdin=yaml.safe_dump(body))
    assert ignored.stderr == ""
    assert "notAField" not in stored(kubectl, "service", "web")["spec"]
    # The object exists: a second apply patches it, and the patch's result is checked the same way.
    body["spec"]["alsoNotAField"] = True
    patched = kubectl.apply(body, check=False)
    assert patched.returncode == 1
    # (kubectl's patch sets the fields the live object lacks again; the paths come sorted, as for a map)
    assert patched.stderr.strip().endswith(
        'strict decoding error: unknown field "spec.alsoNotAField", unknown field "spec.notAField", unknown '
        'field "spec.ports[0].colour"')
    assert patched.stderr.startswith('The request is invalid: patch: Invalid value: "map[metadata:map[')
    warned = kubectl.run("apply", "--validate=warn", "-f", "-", stdin=yaml.safe_dump(body))
    assert 'Warning: unknown field "spec.alsoNotAField"' in warned.stderr.splitlines()
    assert "alsoNotAField" not in stored(kubectl, "service", "web")["spec"]


def test_unknown_fields_in_metadata_and_other_builtin_kinds(kubectl: Kubectl) -> None:
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"name": "cafe", "namespace": "default", "colour": "red"},
               "spec": {"rules": [{"host": "cafe.example.com", "http": {"paths": [
                   {"path": "/", "pathType": "Prefix", "weight": 3,
                    "backend": {"service": {"name": "tea", "port": {"number": 80}}}}]}}]}}
    out = kubectl.apply(ingress, check=False)
    assert out.stderr.strip().endswith(
        'Ingress in version "v1" cannot be handled as a Ingress: strict decoding error: unknown field '
        '"metadata.colour", unknown field "spec.rules[0].http.paths[0].weight"')
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
              "stringdata": {"k": "v"}}                     # a misspelt stringData is not declared
    out = kubectl.apply(secret, check=False)
    assert out.stderr.strip().endswith('strict decoding error: unknown field "stringdata"')


def test_server_side_apply_refuses_undeclared_fields_whatever_the_directive(kubectl: Kubectl) -> None:
    body = service(notAField=1)
    for flags in ((), ("--validate=warn",), ("--validate=false",)):
        out = kubectl.run("apply", "--server-side", *flags, "-f", "-", stdin=yaml.safe_dump(body),
                          check=False)
        assert out.returncode == 1
        assert out.stderr.strip() == (
            "Error from server: failed to create typed patch object (default/web; /v1, Kind=Service): "
            ".spec.notAField: field not declared in schema"), flags
    assert stored(kubectl, "services")["items"] == []
    del body["spec"]["notAField"]
    kubectl.run("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(body))
    body["spec"]["ports"][0]["colour"] = "blue"      # a keyed list item is named by its key
    out = kubectl.run("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(body), check=False)
    assert out.stderr.strip().endswith(".spec.ports[port=80].colour: field not declared in schema")


def test_custom_resources_by_validate_mode_and_server_side_apply(kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", str(CRDS))
    kubectl.run("create", "namespace", "cafe")
    body = vs()
    body["spec"]["notAField"] = 1
    strict = kubectl.apply(body, check=False)
    assert strict.stderr.strip().endswith(
        'VirtualServer in version "v1" cannot be handled as a VirtualServer: strict decoding error: unknown '
        'field "spec.notAField"')
    warn = kubectl.run("apply", "--validate=warn", "-f", "-", stdin=yaml.safe_dump(body))
    assert warn.stderr.splitlines() == ['Warning: unknown field "spec.notAField"']
    assert "notAField" not in kubectl.json("vs", "cafe", "-n", "cafe")["spec"]
    ssa = kubectl.run("apply", "--server-side", "--validate=false", "-f", "-", stdin=yaml.safe_dump(body),
                      check=False)
    assert ssa.stderr.strip() == (
        "Error from server: failed to create typed patch object (cafe/cafe; k8s.nginx.org/v1, "
        "Kind=VirtualServer): .spec.notAField: field not declared in schema")


def test_immutable_secrets_and_configmaps(kubectl: Kubectl) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "frozen", "namespace": "default"},
              "immutable": True, "stringData": {"k": "v"}}
    kubectl.apply(secret)
    secret["stringData"] = {"k": "changed"}
    out = kubectl.apply(secret, check=False)
    assert out.returncode == 1
    assert out.stderr.strip() == (
        'The Secret "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set')
    assert stored(kubectl, "secret", "frozen")["data"] == {"k": b64("v")}
    unfreeze = kubectl.run("patch", "secret", "frozen", "-n", "default", "--type=merge",
                           "-p", '{"immutable":false}', check=False)
    assert unfreeze.stderr.strip() == (
        'The Secret "frozen" is invalid: immutable: Forbidden: field is immutable when `immutable` is set')
    kubectl.run("annotate", "secret", "frozen", "-n", "default", "note=metadata-still-changes")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frozen", "namespace": "default"},
          "immutable": True, "data": {"k": "v"}}
    kubectl.apply(cm)
    cm["data"] = {"k": "changed"}
    out = kubectl.apply(cm, check=False)
    assert out.stderr.strip() == (
        'The ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set')
    kubectl.run("delete", "configmap", "frozen", "-n", "default")   # deleting is how it changes
    kubectl.apply(cm)
    assert stored(kubectl, "configmap", "frozen")["data"] == {"k": "changed"}


def test_immutable_service_cluster_ip_and_ingressclass_controller(kubectl: Kubectl) -> None:
    kubectl.apply(service())
    allocated = stored(kubectl, "service", "web")["spec"]["clusterIP"]
    kubectl.apply(service(type="NodePort"))                     # an apply that omits clusterIP keeps it
    assert stored(kubectl, "service", "web")["spec"]["clusterIPs"] == [allocated]
    out = kubectl.apply(service(clusterIP="10.96.250.250"), check=False)
    assert out.returncode == 1
    assert out.stderr.strip() == (
        'The Service "web" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.250.250"}: may not '
        'change once set')
    ic = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"},
          "spec": {"controller": "nginx.org/ingress-controller"}}
    kubectl.apply(ic)
    ic["spec"]["controller"] = "example.com/other"
    out = kubectl.apply(ic, check=False)
    assert out.stderr.strip() == (
        'The IngressClass "nginx" is invalid: spec.controller: Invalid value: "example.com/other": field is '
        'immutable')


def test_labels_annotations_and_names_are_validated(kubectl: Kubectl) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "labelled", "namespace": "default", "labels": {"version": "1.0+build"}}}
    out = kubectl.apply(cm, check=False)
    assert out.returncode == 1
    assert out.stderr.strip() == (
        'The ConfigMap "labelled" is invalid: metadata.labels: Invalid value: "1.0+build": a valid label '
        "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
        "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
    cm["metadata"]["labels"] = {"example.com/ok": "yes"}
    cm["metadata"]["annotations"] = {"bad key": "x"}
    out = kubectl.apply(cm, check=False)
    assert out.stderr.strip().startswith(
        'The ConfigMap "labelled" is invalid: metadata.annotations: Invalid value: "bad key": name part must '
        "consist of alphanumeric characters")
    del cm["metadata"]["annotations"]
    kubectl.apply(cm)
    out = kubectl.apply(service() | {"metadata": {"name": "1web", "namespace": "default"}}, check=False)
    assert out.stderr.strip().startswith(
        'The Service "1web" is invalid: metadata.name: Invalid value: "1web": a DNS-1035 label must consist '
        "of lower case alphanumeric characters or '-', start with an alphabetic character")
    generated = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-", "namespace":
                                                                       "default"}}
    name = kubectl.run("create", "-f", "-", "-o", "name", stdin=yaml.safe_dump(generated)).stdout.strip()
    assert name.startswith("configmap/gen-") and len(name) == len("configmap/gen-") + 5
    generated["metadata"]["generateName"] = "Gen_"
    out = kubectl.run("create", "-f", "-", stdin=yaml.safe_dump(generated), check=False)
    assert 'metadata.generateName: Invalid value: "Gen_": a lowercase RFC 1123 subdomain' in out.stderr


def test_node_ports_are_allocated_kept_and_checked(kubectl: Kubectl) -> None:
    kubectl.apply(service(type="NodePort"))
    port = stored(kubectl, "service", "web")["spec"]["ports"][0]
    assert 30000 <= port["nodePort"] <= 32767
    table = kubectl.run("get", "service", "web", "-n", "default").stdout
    assert f"80:{port['nodePort']}/TCP" in table
    kubectl.apply(service(type="NodePort", sessionAffinity="ClientIP"))     # the apply leaves nodePort out
    assert stored(kubectl, "service", "web")["spec"]["ports"][0]["nodePort"] == port["nodePort"]
    taken = service(type="NodePort", ports=[{"port": 80, "nodePort": port["nodePort"]}])
    taken["metadata"]["name"] = "other"
    out = kubectl.apply(taken, check=False)
    assert out.stderr.strip() == (f'The Service "other" is invalid: spec.ports[0].nodePort: Invalid value: '
                                  f'{port["nodePort"]}: provided port is already allocated')
    taken["spec"]["ports"][0]["nodePort"] = 80
    out = kubectl.apply(taken, check=False)
    assert out.stderr.strip().endswith("spec.ports[0].nodePort: Invalid value: 80: provided port is not in "
                                       "the valid range. The range of valid ports is 30000-32767")
    kubectl.apply(service())                                   # back to ClusterIP: the node port is released
    assert "nodePort" not in stored(kubectl, "service", "web")["spec"]["ports"][0]
    taken["spec"]["ports"][0]["nodePort"] = port["nodePort"]
    kubectl.apply(taken)
    lb = service(type="LoadBalancer")
    lb["metadata"]["name"] = "lb"
    kubectl.apply(lb)
    spec = stored(kubectl, "service", "lb")["spec"]
    assert spec["allocateLoadBalancerNodePorts"] is True and spec["externalTrafficPolicy"] == "Cluster"
    assert spec["ports"][0]["nodePort"] != port["nodePort"]


def managed_fields(kubectl: Kubectl, *what: str) -> list[dict[str, Any]]:
    out = kubectl.run("get", "-o", "json", "--show-managed-fields", *what, "-n", "default").stdout
    entries: list[dict[str, Any]] = json.loads(out)["metadata"].get("managedFields") or []
    return entries


def managers(kubectl: Kubectl, *what: str) -> dict[tuple[str, str], Any]:
    entries = managed_fields(kubectl, *what)
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in entries}


def test_non_apply_writes_own_fields_and_conflict_with_server_side_apply(kubectl: Kubectl) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "settings", "namespace": "default", "labels": {"app": "web"}},
          "data": {"a": "1", "b": "2"}}
    kubectl.apply(cm)                                   # client-side apply: an Update by its own manager
    owned = managers(kubectl, "configmap", "settings")
    assert owned[("kubectl-client-side-apply", "Update")]["f:data"] == {"f:a": {}, "f:b": {}}
    kubectl.run("patch", "configmap", "settings", "-n", "default", "--type=merge", "-p", '{"data":{"a":"9"}}')
    kubectl.run("label", "configmap", "settings", "-n", "default", "owner=ops")
    owned = managers(kubectl, "configmap", "settings")
    assert owned[("kubectl-patch", "Update")] == {"f:data": {"f:a": {}}}     # the changed field moved
    assert owned[("kubectl-client-side-apply", "Update")]["f:data"] == {"f:b": {}}
    assert owned[("kubectl-label", "Update")] == {"f:metadata": {"f:labels": {"f:owner": {}}}}
    # A server-side apply of another value for a field a non-apply writer owns conflicts, as on a cluster.
    cm["data"]["a"] = "5"
    out = kubectl.run("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(cm), check=False)
    assert out.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl-patch" using v1: .data.a' in out.stderr
    kubectl.run("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump(cm))
    owned = managers(kubectl, "configmap", "settings")
    assert ("kubectl-patch", "Update") not in owned                         # it owned nothing else
    assert owned[("kubectl", "Apply")]["f:data"] == {"f:a": {}, "f:b": {}}
    assert owned[("kubectl-label", "Update")] == {"f:metadata": {"f:labels": {"f:owner": {}}}}
    assert stored(kubectl, "configmap", "settings")["data"] == {"a": "5", "b": "2"}


def test_create_and_status_writers_are_recorded(kubectl: Kubectl) -> None:
    kubectl.run("create", "configmap", "made", "-n", "default", "--from-literal=k=v")
    assert managers(kubectl, "configmap", "made") == {("kubectl-create", "Update"): {"f:data": {"f:k": {}}}}
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web",
                                                                                 "namespace": "default"},
           "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}
    kubectl.run("create", "-f", "-", stdin=yaml.safe_dump(ing))
    kubectl.run("patch", "ingress", "web", "-n", "default", "--subresource=status", "--type=merge",
                "-p", '{"status":{"loadBalancer":{"ingress":[{"ip":"10.0.0.1"}]}}}')
    entries = managed_fields(kubectl, "ingress", "web")
    status = next(e for e in entries if e.get("subresource") == "status")
    assert (status["manager"], status["operation"]) == ("kubectl-patch", "Update")
    assert status["fieldsV1"] == {"f:status": {"f:loadBalancer": {"f:ingress": {}}}}
    create = next(e for e in entries if e["manager"] == "kubectl-create")
    assert "f:status" not in create["fieldsV1"] and "f:spec" in create["fieldsV1"]


def test_pod_template_defaults_as_kubectl_shows_them(kubectl: Kubectl) -> None:
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"serviceAccountName": "nginx-ingress",
                     "containers": [
                         {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                          "readinessProbe": {"httpGet": {"port": 8081}}},
                         {"name": "latest", "image": "registry.example.com:5000/tools"}],
                     "volumes": [{"name": "certs", "secret": {"secretName": "tls"}}]}}}}
    kubectl.apply(deployment)
    pod = stored(kubectl, "deployment", "web")["spec"]["template"]["spec"]
    web, latest = pod["containers"]
    assert (web["imagePullPolicy"], latest["imagePullPolicy"]) == ("IfNotPresent", "Always")
    assert web["terminationMessagePath"] == "/dev/termination-log" and web["resources"] == {}
    assert web["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert web["readinessProbe"] == {"httpGet": {"port": 8081, "path": "/", "scheme": "HTTP"},
                                     "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                                     "failureThreshold": 3}
    assert pod["serviceAccount"] == "nginx-ingress"              # the deprecated mirror of the name
    assert pod["volumes"] == [{"name": "certs", "secret": {"secretName": "tls", "defaultMode": 420}}]
    # An unchanged apply stays a no-op: the defaults do not look like changes.
    before = stored(kubectl, "deployment", "web")["metadata"]["resourceVersion"]
    assert kubectl.apply(deployment).stdout.strip() == "deployment.apps/web unchanged"
    assert stored(kubectl, "deployment", "web")["metadata"]["resourceVersion"] == before


def test_service_ports_and_type_are_validated(kubectl: Kubectl) -> None:
    two = service(ports=[{"port": 80}, {"port": 443}])
    out = kubectl.apply(two, check=False)
    assert out.stderr.strip().splitlines() == ['The Service "web" is invalid: ',
                                               "* spec.ports[0].name: Required value",
                                               "* spec.ports[1].name: Required value"]
    bad = service(type="Bogus", ports=[{"name": "HTTP", "port": 0, "protocol": "HTTP", "targetPort": "a--b"}])
    out = kubectl.apply(bad, check=False)
    message = out.stderr.strip()
    for part in ('spec.type: Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName", '
                 '"LoadBalancer", "NodePort"',
                 'spec.ports[0].name: Invalid value: "HTTP": a lowercase RFC 1123 label must consist of',
                 "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                 'spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
                 'spec.ports[0].targetPort: Invalid value: "a--b": must not contain consecutive hyphens'):
        assert part in message, part
    assert stored(kubectl, "services")["items"] == []
    kubectl.apply(service(ports=[{"name": "http", "port": 80}, {"name": "https", "port": 443}]))
