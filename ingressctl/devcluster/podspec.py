"""The PodSpec defaults kube-apiserver fills in (`pkg/apis/core/v1/defaults.go` and the conversion of the
deprecated `serviceAccount` field), for Pods and for the pod templates of workloads, where `kubectl get -o
yaml`, `kubectl diff` and Helm see them.

Guarantees: `default_pod_spec(spec)` sets the defaults in place on the spec dict it is given and replaces
(never modifies) any nested value it changes (containers, ports, probes, volumes), so a caller's input
objects are left as they were.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
_PROBE_DEFAULTS = (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                   ("failureThreshold", 3))


def pull_policy(image: str) -> str:
    """Always for an image without a tag or with `:latest`, else IfNotPresent (a digest counts as a tag)."""
    if "@" in image:
        return "IfNotPresent"
    name = image.rsplit("/", 1)[-1]
    tag = name.split(":", 1)[1] if ":" in name else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_probe(probe: Any) -> Any:
    if not isinstance(probe, dict):
        return probe
    out = dict(probe)
    for key, value in _PROBE_DEFAULTS:
        out.setdefault(key, value)
    if isinstance(out.get("httpGet"), dict):
        action = out["httpGet"] = {"scheme": "HTTP", **out["httpGet"]}
        if not action.get("path"):
            action["path"] = "/"
    return out


def default_container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    out = dict(container)
    out.setdefault("imagePullPolicy", pull_policy(str(out.get("image") or "")))
    out.setdefault("terminationMessagePath", "/dev/termination-log")
    out.setdefault("terminationMessagePolicy", "File")
    out.setdefault("resources", {})
    if isinstance(out.get("ports"), list):
        out["ports"] = [{**p, "protocol": p.get("protocol") or "TCP"} if isinstance(p, dict) else p
                        for p in out["ports"]]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if probe in out:
            out[probe] = _default_probe(out[probe])
    return out


def _default_volume(volume: Any) -> Any:
    if not isinstance(volume, dict):
        return volume
    out = dict(volume)
    for source in ("secret", "configMap", "projected", "downwardAPI"):
        if isinstance(out.get(source), dict):
            out[source] = {"defaultMode": 420, **out[source]}
    if isinstance(out.get("hostPath"), dict):
        out["hostPath"] = {"type": "", **out["hostPath"]}
    return out


def default_pod_spec(spec: Obj) -> None:
    """The PodSpec defaults a real API server fills in (for Pods and workloads' pod templates)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [default_container(c) for c in spec[key]]
    if isinstance(spec.get("volumes"), list):
        spec["volumes"] = [_default_volume(v) for v in spec["volumes"]]
    # The deprecated serviceAccount field mirrors serviceAccountName (v1 conversion, both directions).
    if spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    elif spec.get("serviceAccount") and not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"]
