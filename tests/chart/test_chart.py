"""The Helm chart, linted and rendered by upstream Helm 3 and Helm 4 (`helm lint`, `helm template`) with
default values and with each documented option; the rendered arguments are parsed by the controller's own
command line."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import jsonschema
import pytest
import yaml

import ingressctl
from ingressctl.cli import build_parser, parse_args
from tests.chart.chartlib import (
    CHART,
    NAMESPACE,
    RELEASE,
    ROOT,
    Helm,
    container,
    find,
    flags,
    kinds,
    names,
)

ENV = {"POD_NAMESPACE": NAMESPACE, "POD_NAME": "ingressctl-controller-0"}
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "IngressClass"}
DEFAULT_OBJECTS = [
    ("ServiceAccount", "ingressctl"), ("ConfigMap", "ingressctl"), ("ClusterRole", "ingressctl"),
    ("ClusterRoleBinding", "ingressctl"), ("Role", "ingressctl"), ("RoleBinding", "ingressctl"),
    ("Service", "ingressctl-controller"), ("Deployment", "ingressctl-controller"), ("IngressClass", "nginx"),
]


def values_yaml() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return data


def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
    return data


def settings_of(docs: list[dict[str, Any]], kind: str = "Deployment") -> Any:
    """The controller's Settings from the rendered args; parse_args exits (fails the test) on a bad flag."""
    return parse_args(container(docs, kind)["args"], environ=ENV)


def port_named(c: dict[str, Any], name: str) -> int:
    ports = [p["containerPort"] for p in c["ports"] if p["name"] == name]
    assert len(ports) == 1, c["ports"]
    return int(ports[0])


# --------------------------------------------------------------------------------------------- metadata


def test_chart_yaml_matches_the_package() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == "ingressctl"
    assert chart["appVersion"] == project["version"] == ingressctl.__version__


# NIC's value names that apply to ingressctl (dotted paths), all present in values.yaml and the schema.
NIC_KEYS = [
    "controller.kind", "controller.replicaCount", "controller.image.repository", "controller.image.tag",
    "controller.image.pullPolicy", "controller.ingressClass.name", "controller.ingressClass.create",
    "controller.ingressClass.setAsDefaultIngress", "controller.config.name", "controller.config.entries",
    "controller.defaultTLS.secret", "controller.wildcardTLS.secret", "controller.enableSnippets",
    "controller.healthStatus", "controller.healthStatusURI", "controller.nginxStatus.enable",
    "controller.nginxStatus.port", "controller.reportIngressStatus.enable",
    "controller.reportIngressStatus.externalService", "controller.reportIngressStatus.enableLeaderElection",
    "controller.reportIngressStatus.leaderElectionLockName", "controller.watchNamespace",
    "controller.logFormat", "controller.logLevel", "controller.readyStatus.enable",
    "controller.readyStatus.port",
    "controller.readyStatus.initialDelaySeconds", "controller.resources", "controller.nodeSelector",
    "controller.tolerations", "controller.affinity", "controller.service.create", "controller.service.type",
    "controller.service.httpPort", "controller.service.httpsPort", "controller.service.externalTrafficPolicy",
    "controller.service.annotations", "controller.podDisruptionBudget.enabled",
    "controller.podDisruptionBudget.minAvailable", "prometheus.create", "prometheus.port",
    "prometheus.service.create", "prometheus.serviceMonitor.create", "rbac.create", "serviceAccount.create",
    "serviceAccount.name", "controller.volumes", "controller.volumeMounts",
]


@pytest.mark.parametrize("path", NIC_KEYS)
def test_nic_value_names_exist(path: str) -> None:
    node: Any = values_yaml()
    sch: Any = schema()
    for part in path.split("."):
        assert isinstance(node, dict) and part in node, f"{path} missing in values.yaml"
        node = node[part]
        assert part in sch["properties"], f"{path} missing in values.schema.json"
        sch = sch["properties"][part]


# --------------------------------------------------------------------------------------------- schema


def test_schema_is_draft7_and_accepts_values_yaml() -> None:
    s = schema()
    assert s["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(s)
    jsonschema.Draft7Validator(s).validate(values_yaml())


BAD_VALUES = [
    ({"controller": {"kind": "StatefulSet"}}, "controller.kind"),
    ({"controller": {"replicaCount": -1}}, "controller.replicaCount"),
    ({"controller": {"replicas": 2}}, "replicas"),  # a typo is an error, not silently ignored
    ({"controller": {"service": {"type": "ExternalName"}}}, "controller.service.type"),
    ({"controller": {"service": {"externalTrafficPolicy": "Anywhere"}}}, "externalTrafficPolicy"),
    ({"controller": {"readyStatus": {"port": 80}}}, "controller.readyStatus.port"),
    ({"controller": {"defaultTLS": {"secret": "no-namespace"}}}, "controller.defaultTLS.secret"),
    ({"controller": {"logLevel": "verbose"}}, "controller.logLevel"),
    ({"controller": {"logFormat": "glog"}}, "controller.logFormat"),
    ({"controller": {"image": {"pullPolicy": "Sometimes"}}}, "controller.image.pullPolicy"),
    ({"controller": {"enableSnippets": "yes"}}, "controller.enableSnippets"),
    ({"controller": {"ingressNginxCompat": "true"}}, "controller.ingressNginxCompat"),
    ({"controller": {"healthStatusURI": "/"}}, "controller.healthStatusURI"),
    ({"controller": {"watchNamespace": "Not_A_Namespace"}}, "controller.watchNamespace"),
    ({"controller": {"podDisruptionBudget": {"minAvailable": "half"}}}, "minAvailable"),
    ({"controller": {"reportIngressStatus": {"leaderElectionLockName": "Lock_Name"}}},
     "leaderElectionLockName"),
    ({"controller": {"volumeMounts": [{"name": "conf-d"}]}}, "controller.volumeMounts"),  # no mountPath
    ({"prometheus": {"port": 70000}}, "prometheus.port"),
    ({"rbac": {"create": "true"}}, "rbac.create"),
    ({"serviceAccount": {"name": "Bad Name"}}, "serviceAccount.name"),
]


def _merged(override: dict[str, Any]) -> dict[str, Any]:
    def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        for k, v in over.items():
            out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
        return out
    return merge(values_yaml(), override)


@pytest.mark.parametrize(("override", "where"), BAD_VALUES, ids=[w for _, w in BAD_VALUES])
def test_schema_rejects_bad_values(override: dict[str, Any], where: str) -> None:
    errors = list(jsonschema.Draft7Validator(schema()).iter_errors(_merged(override)))
    assert errors, f"{override} was accepted"


@pytest.mark.parametrize(("override", "where"), BAD_VALUES, ids=[w for _, w in BAD_VALUES])
def test_helm_rejects_bad_values(helm: Helm, override: dict[str, Any], where: str) -> None:
    err = helm.error(override)
    assert "values don't meet the specifications of the schema" in err
    assert helm.schema_path(where) in err, err


# --------------------------------------------------------------------------------------------- lint


def test_lint(helm: Helm) -> None:
    out = helm.run("lint", str(CHART), "--strict", check=True)
    assert "1 chart(s) linted, 0 chart(s) failed" in out.stdout
    monitor = {"prometheus": {"service": {"create": True}, "serviceMonitor": {"create": True}}}
    values = helm.values_files({"controller": {"kind": "DaemonSet", "hostPort": {"enable": True}}}, monitor,
                               {"controller": {"podDisruptionBudget": {"enabled": True}}})
    helm.run("lint", str(CHART), "--strict", *values, check=True)
    bad = helm.run("lint", str(CHART), *helm.values_files({"controller": {"kind": "StatefulSet"}}))
    assert bad.returncode != 0
    assert "values don't meet the specifications of the schema" in bad.stdout + bad.stderr


def test_several_values_files_merge_left_to_right(helm: Helm) -> None:
    docs = helm.render({"controller": {"replicaCount": 2, "logLevel": "debug"}},
                       {"controller": {"replicaCount": 3}},
                       {"controller": {"config": {"entries": {"worker-processes": "2"}}}})
    assert find(docs, "Deployment")["spec"]["replicas"] == 3
    assert settings_of(docs).log.level == "debug"
    assert find(docs, "ConfigMap")["data"] == {"worker-processes": "2"}


# --------------------------------------------------------------------------------------------- defaults


def test_default_objects(helm: Helm) -> None:
    docs = helm.render()
    assert sorted(names(docs)) == sorted(DEFAULT_OBJECTS)
    # Helm's install order: ServiceAccount and ConfigMap before RBAC, Service before the workload.
    order = kinds(docs)
    assert order.index("ServiceAccount") < order.index("ClusterRole") < order.index("Service") < order.index(
        "Deployment")
    for d in docs:
        md = d["metadata"]
        if d["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in md, d["kind"]
        else:
            assert md["namespace"] == NAMESPACE, d["kind"]
        assert md["labels"]["app.kubernetes.io/instance"] == RELEASE
        assert md["labels"]["app.kubernetes.io/managed-by"] == "Helm"
        assert len(md["name"]) <= 63


def test_default_pod(helm: Helm) -> None:
    docs = helm.render()
    dep = find(docs, "Deployment")
    pod = dep["spec"]["template"]
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert find(docs, "Service")["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert pod["spec"]["serviceAccountName"] == find(docs, "ServiceAccount")["metadata"]["name"]
    c = container(docs)
    assert c["image"] == f"ingressctl:{ingressctl.__version__}"
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"]}
    assert env == {"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/nginx-ready", "port": "readiness-port"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "readiness-port"}
    assert port_named(c, "readiness-port") == 8081
    assert (port_named(c, "http"), port_named(c, "https"), port_named(c, "prometheus")) == (80, 443, 9113)
    sc = c["securityContext"]
    assert sc["runAsUser"] == 101 and sc["runAsNonRoot"] is True
    # NGINX's NET_BIND_SERVICE is a file capability: no_new_privs would make the kernel ignore it.
    assert sc["allowPrivilegeEscalation"] is True
    assert sc["capabilities"] == {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}
    assert pod["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["metadata"]["annotations"] == {"prometheus.io/scrape": "true", "prometheus.io/port": "9113",
                                              "prometheus.io/scheme": "http"}


def test_default_args_are_what_the_objects_need(helm: Helm) -> None:
    docs = helm.render()
    c = container(docs)
    s = settings_of(docs)
    cm = find(docs, "ConfigMap")["metadata"]
    assert s.controller.nginx_configmaps == f"{cm['namespace']}/{cm['name']}"
    assert s.controller.ingress_class == find(docs, "IngressClass")["metadata"]["name"] == "nginx"
    assert find(docs, "IngressClass")["spec"]["controller"] == "nginx.org/ingress-controller"
    assert s.controller.report_ingress_status is True
    assert s.controller.external_service == find(docs, "Service")["metadata"]["name"]
    assert s.leader_election.enabled is True
    assert s.leader_election.lock_name == "ingressctl-leader-election"
    assert s.serving.ready_status_port == port_named(c, "readiness-port")
    assert s.serving.enable_prometheus_metrics is True
    assert s.serving.prometheus_metrics_listen_port == port_named(c, "prometheus")
    assert (s.nginx.http_port, s.nginx.https_port) == (port_named(c, "http"), port_named(c, "https"))
    assert s.kube.watch_namespaces == ()
    assert (s.kube.pod_namespace, s.kube.pod_name) == (ENV["POD_NAMESPACE"], ENV["POD_NAME"])
    assert (s.log.format, s.log.level) == ("text", "info")


def test_every_rendered_flag_is_a_controller_flag(helm: Helm) -> None:
    known = {o for a in build_parser()._actions for o in a.option_strings}
    full = {"controller": {"defaultTLS": {"secret": "a/b"}, "wildcardTLS": {"secret": "a/c"},
                           "watchNamespace": "a"}}
    assert set(flags(container(helm.render(full))["args"])) <= known
    with pytest.raises(SystemExit):  # and the check would catch one that is not
        parse_args(["--no-such-flag=1"], environ=ENV)


def test_service_defaults(helm: Helm) -> None:
    svc = find(helm.render(), "Service")
    assert svc["spec"]["type"] == "LoadBalancer"
    assert svc["spec"]["externalTrafficPolicy"] == "Local"
    assert [(p["name"], p["port"], p["targetPort"]) for p in svc["spec"]["ports"]] == [
        ("http", 80, "http"), ("https", 443, "https")]


GC = "globalconfigurations"
CUSTOM_RESOURCES = ("virtualservers", "virtualserverroutes", "transportservers", "policies", GC)


def test_custom_resource_rbac_follows_enable_custom_resources(helm: Helm) -> None:
    def groups(values: dict[str, Any] | None) -> set[str]:
        rules = find(helm.render(values), "ClusterRole")["rules"]
        return {g for rule in rules for g in rule["apiGroups"]}
    assert "k8s.nginx.org" in groups(None)
    assert "k8s.nginx.org" not in groups({"controller": {"enableCustomResources": False}})


def test_rbac_defaults(helm: Helm) -> None:
    docs = helm.render()
    rules = {(g, r): sorted(rule["verbs"]) for rule in find(docs, "ClusterRole")["rules"]
             for g in rule["apiGroups"] for r in rule["resources"]}
    read = ["get", "list", "watch"]
    assert rules == {
        ("", "services"): ["list", "watch"], ("", "secrets"): read,
        ("discovery.k8s.io", "endpointslices"): ["list", "watch"],
        ("networking.k8s.io", "ingresses"): read, ("networking.k8s.io", "ingressclasses"): read,
        ("networking.k8s.io", "ingresses/status"): ["update"], ("", "events"): ["create", "patch"],
        **{("k8s.nginx.org", r): read for r in CUSTOM_RESOURCES},
        **{("k8s.nginx.org", f"{r}/status"): ["patch", "update"] for r in CUSTOM_RESOURCES if r != GC},
        ("", "pods"): ["list", "watch"],     # VirtualServer upstream subselectors
    }
    role = find(docs, "Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    lease_rules = [r for r in role["rules"] if r["resources"] == ["leases"]]
    assert {tuple(r["verbs"]): r.get("resourceNames") for r in lease_rules} == {
        ("create",): None, ("get", "update"): ["ingressctl-leader-election"]}
    sa = find(docs, "ServiceAccount")["metadata"]
    for binding in (find(docs, "ClusterRoleBinding"), find(docs, "RoleBinding")):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["name"], "namespace": NAMESPACE}]
    cluster_role = find(docs, "ClusterRole")["metadata"]["name"]
    assert find(docs, "ClusterRoleBinding")["roleRef"]["name"] == cluster_role
    assert find(docs, "RoleBinding")["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                    "name": role["metadata"]["name"]}


# --------------------------------------------------------------------------------------------- options


@pytest.mark.parametrize("kind", ["DaemonSet", "daemonset"])
def test_daemonset(helm: Helm, kind: str) -> None:
    docs = helm.render({"controller": {"kind": kind, "hostPort": {"enable": True}}})
    assert "Deployment" not in kinds(docs)
    ds = find(docs, "DaemonSet")
    assert "replicas" not in ds["spec"]
    pod_labels = ds["spec"]["template"]["metadata"]["labels"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    c = container(docs, "DaemonSet")
    assert {p["name"]: p.get("hostPort") for p in c["ports"]} == {
        "http": 80, "https": 443, "readiness-port": None, "prometheus": None}
    settings_of(docs, "DaemonSet")


def test_replicas(helm: Helm) -> None:
    assert find(helm.render({"controller": {"replicaCount": 3}}), "Deployment")["spec"]["replicas"] == 3


@pytest.mark.parametrize("stype", ["LoadBalancer", "NodePort", "ClusterIP"])
def test_service_types(helm: Helm, stype: str) -> None:
    values = {"controller": {"service": {
        "type": stype, "externalTrafficPolicy": "Cluster", "annotations": {"example.com/lb": "internal"},
        "loadBalancerIP": "192.0.2.10", "loadBalancerSourceRanges": ["10.0.0.0/8"],
        "httpPort": {"port": 8080, "nodePort": 30080}, "httpsPort": {"nodePort": 30443}}}}
    docs = helm.render(values)
    svc = find(docs, "Service")
    spec = svc["spec"]
    assert spec["type"] == stype
    assert svc["metadata"]["annotations"] == {"example.com/lb": "internal"}
    ports = {p["name"]: p for p in spec["ports"]}
    assert (ports["http"]["port"], ports["http"]["targetPort"], ports["https"]["port"]) == (8080, "http", 443)
    if stype == "ClusterIP":
        assert "externalTrafficPolicy" not in spec  # the API rejects it on ClusterIP Services
        assert all("nodePort" not in p for p in spec["ports"])
    else:
        assert spec["externalTrafficPolicy"] == "Cluster"
        assert (ports["http"]["nodePort"], ports["https"]["nodePort"]) == (30080, 30443)
    if stype == "LoadBalancer":
        assert spec["loadBalancerIP"] == "192.0.2.10"
        assert spec["loadBalancerSourceRanges"] == ["10.0.0.0/8"]
    else:
        assert "loadBalancerIP" not in spec and "loadBalancerSourceRanges" not in spec


def test_only_https(helm: Helm) -> None:
    svc = find(helm.render({"controller": {"service": {"httpPort": {"enable": False}}}}), "Service")
    assert [p["name"] for p in svc["spec"]["ports"]] == ["https"]
    err = helm.error({"controller": {"service": {"httpPort": {"enable": False},
                                                     "httpsPort": {"enable": False}}}})
    assert "both controller.service.httpPort.enable and controller.service.httpsPort.enable are false" in err


def test_no_service(helm: Helm) -> None:
    docs = helm.render({"controller": {"service": {"create": False}}})
    assert "Service" not in kinds(docs)
    assert settings_of(docs).controller.external_service is None
    docs = helm.render({"controller": {"service": {"create": False},
                                           "reportIngressStatus": {"externalService": "edge"}}})
    assert settings_of(docs).controller.external_service == "edge"


@pytest.mark.parametrize(("pdb", "expected"), [
    ({"enabled": True}, {"minAvailable": 1}),
    ({"enabled": True, "minAvailable": "50%"}, {"minAvailable": "50%"}),
    ({"enabled": True, "maxUnavailable": 0}, {"maxUnavailable": 0}),
    ({"enabled": True, "maxUnavailable": 1}, {"maxUnavailable": 1}),
])
def test_pod_disruption_budget(helm: Helm, pdb: dict[str, Any], expected: dict[str, Any]) -> None:
    docs = helm.render({"controller": {"podDisruptionBudget": pdb}})
    spec = find(docs, "PodDisruptionBudget")["spec"]
    assert find(docs, "PodDisruptionBudget")["apiVersion"] == "policy/v1"
    assert {k: v for k, v in spec.items() if k != "selector"} == expected
    pod_labels = find(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= pod_labels.items()
    assert "PodDisruptionBudget" not in kinds(helm.render())


def test_service_monitor(helm: Helm) -> None:
    docs = helm.render({"prometheus": {"service": {"create": True}, "serviceMonitor": {
        "create": True, "labels": {"release": "kube-prometheus"}, "endpoint": {"interval": "15s"}}}})
    sm = find(docs, "ServiceMonitor")
    metrics = find(docs, "Service", "ingressctl-prometheus")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus"
    assert sm["spec"]["selector"]["matchLabels"].items() <= metrics["metadata"]["labels"].items()
    # ...and not the controller's own Service.
    assert not sm["spec"]["selector"]["matchLabels"].items() <= find(
        docs, "Service", "ingressctl-controller")["metadata"]["labels"].items()
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert sm["spec"]["endpoints"] == [{"port": "prometheus", "scheme": "http", "path": "/metrics",
                                        "interval": "15s"}]
    assert [p["name"] for p in metrics["spec"]["ports"]] == ["prometheus"]
    assert metrics["spec"]["ports"][0]["targetPort"] == "prometheus"
    assert "prometheus" in {p["name"] for p in container(docs)["ports"]}


def test_service_monitor_needs_the_metrics_service(helm: Helm) -> None:
    err = helm.error({"prometheus": {"serviceMonitor": {"create": True}}})
    assert "execution error at (ingressctl/templates/controller-prometheus-service.yaml" in err
    assert "needs prometheus.service.create: true" in err
    err = helm.error({"prometheus": {"create": False, "service": {"create": True}}})
    assert "need prometheus.create: true" in err


def test_prometheus_off(helm: Helm) -> None:
    docs = helm.render({"prometheus": {"create": False}})
    c = container(docs)
    assert "prometheus" not in {p["name"] for p in c["ports"]}
    assert "annotations" not in find(docs, "Deployment")["spec"]["template"]["metadata"]
    s = settings_of(docs)
    assert s.serving.enable_prometheus_metrics is False
    assert "--prometheus-metrics-listen-port" not in flags(c["args"])


def test_config_entries(helm: Helm) -> None:
    entries = {"proxy-connect-timeout": "30s", "worker-processes": 4, "ssl-redirect": False,
               "server-names-hash-max-size": 1024}
    docs = helm.render({"controller": {"config": {"name": "nginx-config", "entries": entries,
                                                      "annotations": {"owner": "team-a"}}}})
    cm = find(docs, "ConfigMap")
    assert cm["metadata"]["name"] == "nginx-config"
    assert cm["metadata"]["annotations"] == {"owner": "team-a"}
    # ConfigMap data are strings, whatever type the value had in values.yaml.
    assert cm["data"] == {"proxy-connect-timeout": "30s", "worker-processes": "4", "ssl-redirect": "false",
                          "server-names-hash-max-size": "1024"}
    assert settings_of(docs).controller.nginx_configmaps == f"{NAMESPACE}/nginx-config"
    assert find(helm.render(), "ConfigMap")["data"] == {}


def test_default_and_wildcard_tls(helm: Helm) -> None:
    docs = helm.render({"controller": {"defaultTLS": {"secret": "ingressctl/default-cert"},
                                           "wildcardTLS": {"secret": "shared/wildcard"}}})
    s = settings_of(docs)
    assert s.controller.default_server_tls_secret == "ingressctl/default-cert"
    assert s.controller.wildcard_tls_secret == "shared/wildcard"
    default = flags(container(helm.render())["args"])
    assert "--default-server-tls-secret" not in default and "--wildcard-tls-secret" not in default


def test_watch_namespace(helm: Helm) -> None:
    docs = helm.render({"controller": {"watchNamespace": "shop,reports"}})
    assert settings_of(docs).kube.watch_namespaces == ("shop", "reports")


def test_leader_election_off(helm: Helm) -> None:
    docs = helm.render({"controller": {"reportIngressStatus": {"enableLeaderElection": False}}})
    s = settings_of(docs)
    assert s.leader_election.enabled is False
    assert "--leader-election-lock-name" not in flags(container(docs)["args"])
    assert all(r["resources"] != ["leases"] for r in find(docs, "Role")["rules"])


def test_lock_name(helm: Helm) -> None:
    docs = helm.render({"controller": {"reportIngressStatus": {"leaderElectionLockName": "edge-lock"}}})
    assert settings_of(docs).leader_election.lock_name == "edge-lock"
    assert ["edge-lock"] in [r.get("resourceNames") for r in find(docs, "Role")["rules"]]


def test_status_reporting_off(helm: Helm) -> None:
    docs = helm.render({"controller": {"reportIngressStatus": {"enable": False}}})
    s = settings_of(docs)
    assert s.controller.report_ingress_status is False
    assert s.controller.external_service is None


def test_rbac_off(helm: Helm) -> None:
    docs = helm.render({"rbac": {"create": False}})
    assert not {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} & set(kinds(docs))
    assert "ServiceAccount" in kinds(docs)


def test_service_account_name(helm: Helm) -> None:
    docs = helm.render({"serviceAccount": {"name": "edge-controller", "annotations": {"a": "b"},
                                               "imagePullSecrets": ["registry"]}})
    sa = find(docs, "ServiceAccount")
    assert sa["metadata"]["name"] == "edge-controller"
    assert sa["imagePullSecrets"] == [{"name": "registry"}]
    pod = find(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "edge-controller"
    assert pod["imagePullSecrets"] == [{"name": "registry"}]
    for binding in ("ClusterRoleBinding", "RoleBinding"):
        assert find(docs, binding)["subjects"][0]["name"] == "edge-controller"


@pytest.mark.parametrize(("sa", "expected"), [({"create": False}, "default"),
                                              ({"create": False, "name": "existing"}, "existing")])
def test_existing_service_account(helm: Helm, sa: dict[str, Any], expected: str) -> None:
    docs = helm.render({"serviceAccount": sa})
    assert "ServiceAccount" not in kinds(docs)
    assert find(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == expected
    assert find(docs, "RoleBinding")["subjects"][0]["name"] == expected


def test_ingress_class_options(helm: Helm) -> None:
    docs = helm.render({"controller": {"ingressClass": {"name": "edge", "setAsDefaultIngress": True}}})
    ic = find(docs, "IngressClass")
    assert ic["metadata"]["name"] == "edge"
    assert ic["metadata"]["annotations"] == {"ingressclass.kubernetes.io/is-default-class": "true"}
    assert settings_of(docs).controller.ingress_class == "edge"
    assert "annotations" not in find(helm.render(), "IngressClass")["metadata"]
    assert "IngressClass" not in kinds(helm.render({"controller": {"ingressClass": {"create": False}}}))


def test_probes_and_ready_status(helm: Helm) -> None:
    docs = helm.render({"controller": {"readyStatus": {"port": 9081, "initialDelaySeconds": 5}}})
    c = container(docs)
    assert port_named(c, "readiness-port") == 9081 == settings_of(docs).serving.ready_status_port
    assert c["readinessProbe"]["initialDelaySeconds"] == 5
    docs = helm.render({"controller": {"readyStatus": {"enable": False}}})
    c = container(docs)
    assert "readinessProbe" not in c and "livenessProbe" not in c
    assert "readiness-port" not in {p["name"] for p in c["ports"]}
    assert settings_of(docs).serving.ready_status is False
    c = container(helm.render({"controller": {"livenessProbe": {"enable": False}}}))
    assert "livenessProbe" not in c and "readinessProbe" in c


def test_nginx_options(helm: Helm) -> None:
    docs = helm.render({"controller": {
        "enableSnippets": True, "healthStatus": True, "healthStatusURI": "/healthy",
        "nginxReloadTimeout": 1000000, "nginxStatus": {"port": 8090}, "logFormat": "json",
        "logLevel": "debug", "enableLatencyMetrics": True}})
    s = settings_of(docs)
    assert s.controller.enable_snippets is True
    assert (s.nginx.health_status, s.nginx.health_status_uri) == (True, "/healthy")
    assert s.nginx.reload_timeout_ms == 1000000  # not 1e+06: numbers are rendered as integers
    assert (s.nginx.status, s.nginx.status_port) == (True, 8090)
    assert (s.log.format, s.log.level) == ("json", "debug")
    assert s.serving.enable_latency_metrics is True
    s = settings_of(helm.render({"controller": {"nginxStatus": {"enable": False}}}))
    assert s.nginx.status is False


def test_ingress_nginx_compat(helm: Helm) -> None:
    """controller.ingressNginxCompat passes --ingress-nginx-compat and grants list and watch of ConfigMaps
    cluster-wide; off by default (no argument at all), and with it on the chart's own IngressClass is still
    created as configured."""
    docs = helm.render({})
    assert settings_of(docs).controller.ingress_nginx_compat is False
    assert not any("ingress-nginx-compat" in a for a in container(docs)["args"])
    assert not [r for r in find(docs, "ClusterRole")["rules"] if "configmaps" in r["resources"]]
    docs = helm.render({"controller": {"ingressNginxCompat": True}})
    assert settings_of(docs).controller.ingress_nginx_compat is True
    # the ConfigMaps of custom-headers and auth-proxy-set-headers, where Ingresses are watched
    assert [r["verbs"] for r in find(docs, "ClusterRole")["rules"] if "configmaps" in r["resources"]] == [
        ["list", "watch"]]
    assert find(docs, "IngressClass")["spec"]["controller"] == "nginx.org/ingress-controller"
    docs = helm.render({"controller": {"ingressNginxCompat": True, "ingressClass": {"create": False}}})
    assert settings_of(docs).controller.ingress_nginx_compat is True
    assert not [d for d in docs if d.get("kind") == "IngressClass"]


def test_unprivileged_listeners_and_security_context(helm: Helm) -> None:
    strict = {"runAsUser": 101, "runAsNonRoot": True, "allowPrivilegeEscalation": False,
              "capabilities": {"drop": ["ALL"]}}
    docs = helm.render({"controller": {"defaultHTTPListenerPort": 8080, "defaultHTTPSListenerPort": 8443,
                                           "nginxStatus": {"port": 8088}, "securityContext": strict}})
    c = container(docs)
    s = settings_of(docs)
    assert (s.nginx.http_port, s.nginx.https_port) == (8080, 8443) == (port_named(c, "http"),
                                                                       port_named(c, "https"))
    assert c["securityContext"] == strict
    svc = find(docs, "Service")
    assert [(p["port"], p["targetPort"]) for p in svc["spec"]["ports"]] == [(80, "http"), (443, "https")]


def test_port_collisions_fail(helm: Helm) -> None:
    err = helm.error({"controller": {"readyStatus": {"port": 9113}}})
    assert "the controller's ports must differ" in err
    err = helm.error({"controller": {"defaultHTTPListenerPort": 8080}})  # the NGINX status port
    assert "the controller's ports must differ" in err


def test_image(helm: Helm) -> None:
    digest = "sha256:" + "a" * 64
    c = container(helm.render({"controller": {"image": {"repository": "registry.example/ingressctl",
                                                            "tag": "1.2.3", "pullPolicy": "Always"}}}))
    assert (c["image"], c["imagePullPolicy"]) == ("registry.example/ingressctl:1.2.3", "Always")
    c = container(helm.render({"controller": {"image": {"tag": "1.2.3", "digest": digest}}}))
    assert c["image"] == f"ingressctl@{digest}"


def test_pod_placement_and_resources(helm: Helm) -> None:
    values = {"controller": {
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "edge", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {
                "matchLabels": {"app.kubernetes.io/name": "ingressctl"}}}}]}},
        "resources": {"requests": {"cpu": "200m"}, "limits": {"memory": "512Mi"}},
        "env": [{"name": "TZ", "value": "UTC"}],
        "pod": {"annotations": {"a": "b"}, "extraLabels": {"team": "edge"}},
        "terminationGracePeriodSeconds": 60,
    }}
    docs = helm.render(values)
    pod = find(docs, "Deployment")["spec"]["template"]
    c = container(docs)
    spec = pod["spec"]
    assert spec["nodeSelector"] == values["controller"]["nodeSelector"]
    assert spec["tolerations"] == values["controller"]["tolerations"]
    assert spec["affinity"] == values["controller"]["affinity"]
    assert spec["terminationGracePeriodSeconds"] == 60
    # Deep-merged over the defaults, as Helm does.
    assert c["resources"] == {"requests": {"cpu": "200m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}
    assert c["env"][-1] == {"name": "TZ", "value": "UTC"}
    assert pod["metadata"]["annotations"]["a"] == "b"
    assert pod["metadata"]["labels"]["team"] == "edge"
    assert "team" not in find(docs, "Deployment")["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize("webhook", [False, True])
def test_extra_volumes(helm: Helm, webhook: bool) -> None:
    """NIC's controller.volumes and controller.volumeMounts, beside the admission webhook's own volume."""
    volumes = [{"name": "conf-d", "emptyDir": {"medium": "Memory"}},
               {"name": "secrets", "emptyDir": {"medium": "Memory"}}]
    mounts = [{"name": "conf-d", "mountPath": "/etc/nginx/conf.d"},
              {"name": "secrets", "mountPath": "/etc/nginx/secrets"}]
    docs = helm.render({"controller": {"volumes": volumes, "volumeMounts": mounts,
                                       "admissionWebhook": {"enable": webhook}}})
    spec = find(docs, "Deployment")["spec"]["template"]["spec"]
    own = ["admission-webhook-cert"] if webhook else []
    assert [v["name"] for v in spec["volumes"]] == [*own, "conf-d", "secrets"]
    assert spec["volumes"][-2:] == volumes
    assert [m["name"] for m in container(docs)["volumeMounts"]] == [*own, "conf-d", "secrets"]
    assert container(docs)["volumeMounts"][-2:] == mounts
    if not webhook:
        plain = helm.render({})
        assert "volumes" not in find(plain, "Deployment")["spec"]["template"]["spec"]
        assert "volumeMounts" not in container(plain)


@pytest.mark.parametrize(("name", "values", "prefix"), [
    ("ingressctl", {}, "ingressctl"),
    ("edge", {}, "edge-ingressctl"),
    ("edge", {"nameOverride": "ic"}, "edge-ic"),
    ("x" * 53, {}, ("x" * 53 + "-ingressctl")[:63]),   # Helm's longest release name
    ("edge", {"fullnameOverride": "y" * 80}, "y" * 63),
])
def test_names(helm: Helm, name: str, values: dict[str, Any], prefix: str) -> None:
    docs = helm.render(values, name=name)
    for kind, obj_name in names(docs):
        assert len(obj_name) <= 63, (kind, obj_name)
        if kind != "IngressClass":
            assert obj_name.startswith(prefix[:50]), (kind, obj_name)
    assert find(docs, "ClusterRole")["metadata"]["name"] == prefix
    s = settings_of(docs)  # the derived names (lock, external Service) are still valid flags
    assert s.controller.external_service == find(docs, "Service")["metadata"]["name"]


def test_null_removes_a_default(helm: Helm) -> None:
    """Helm's coalescing: null in a values file removes the chart's default."""
    c = container(helm.render({"controller": {"resources": None}}))
    assert "resources" not in c


# --------------------------------------------------------------------------------------------- docs


def _leaves(sch: dict[str, Any], values: Any, prefix: str = "") -> dict[str, Any]:
    """Every documented value: the schema's leaves (objects without declared properties are one value)."""
    out: dict[str, Any] = {}
    for key, sub in sch["properties"].items():
        value = (values or {}).get(key)
        if "properties" in sub:
            out.update(_leaves(sub, value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_installation_docs_list_every_value_with_its_default() -> None:
    rows = {}
    for line in (ROOT / "docs" / "installation.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith("`"):
            rows[cells[0].strip("`")] = cells[1]
    leaves = _leaves(schema(), values_yaml())
    leaves.pop("global")  # Helm's, shared with subcharts
    assert set(leaves) - set(rows) == set(), "values missing from docs/installation.md"
    assert set(rows) - set(leaves) == set(), "docs/installation.md lists values the chart does not have"
    for key, value in leaves.items():
        if isinstance(value, bool | int | str):
            shown = json.dumps(value) if value == "" or isinstance(value, bool) else str(value)
            assert rows[key] == f"`{shown}`", (key, rows[key], value)
