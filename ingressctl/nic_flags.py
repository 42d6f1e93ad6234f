"""NIC's command-line flags that ingressctl knows but does not implement, in one table.

NIC's manifests and Helm chart pass many flags whose features ingressctl does not have (NGINX Plus, App
Protect, custom resources, ...), usually with the value that leaves the feature off. Each flag here lists the
values that keep ingressctl's behaviour (accepted without a word), the values accepted with a warning because
they change nothing a user could observe, and a reason. Any other value is refused before anything starts,
with a message naming the flag: a NIC command line is never half-honoured in silence.

Flags ingressctl implements are in `ingressctl.cli`; a flag in neither place is an unknown flag (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass

ANY = ("*",)
"""`accepts` for a flag whose value does not matter while the feature it belongs to is refused."""


@dataclass(frozen=True)
class UnsupportedFlag:
    name: str                       # without dashes
    reason: str
    accepts: tuple[str, ...] = ("false",)  # values (bools as "true"/"false") that keep ingressctl's behaviour
    boolean: bool = True
    warns: tuple[str, ...] = ()     # values accepted with a warning (`reason` says why they change nothing)

    def check(self, value: str) -> tuple[bool, str]:
        """(accepted, warning or error message) for `value` (already normalised for booleans)."""
        if value in self.warns:
            return True, f"-{self.name}={value} has no effect in ingressctl: {self.reason}"
        if self.accepts == ANY or value in self.accepts:
            return True, ""
        return False, f"-{self.name}={value} is not supported by ingressctl: {self.reason}"


def _off(name: str, reason: str) -> UnsupportedFlag:
    return UnsupportedFlag(name, reason)


def _unset(name: str, reason: str, *accepted: str) -> UnsupportedFlag:
    return UnsupportedFlag(name, reason, accepts=("", *accepted), boolean=False)


_PLUS = "NGINX Plus is not supported"
_AP = "NGINX App Protect needs NGINX Plus, which is not supported"
_CRD = "this integration of the custom resources is not supported yet"

UNSUPPORTED_FLAGS: dict[str, UnsupportedFlag] = {f.name: f for f in (
    _off("nginx-plus", _PLUS),
    _unset("mgmt-configmap", _PLUS),
    _off("enable-app-protect", _AP),
    _unset("app-protect-log-level", _AP, "fatal"),
    _unset("app-protect-enforcer-address", _AP, "127.0.0.1:50000"),
    _off("enable-app-protect-dos", _AP),
    _off("app-protect-dos-debug", _AP),
    _unset("app-protect-dos-max-daemons", _AP, "0"),
    _unset("app-protect-dos-max-workers", _AP, "0"),
    _unset("app-protect-dos-memory", _AP, "0"),
    _off("enable-app-protect-ip-intelligence", _AP),
    _off("agent", "NGINX Agent is not supported"),
    _unset("agent-instance-group", "NGINX Agent is not supported"),
    _off("enable-service-insight", _PLUS + " (service insight is an NGINX Plus feature)"),
    UnsupportedFlag("service-insight-listen-port", "service insight is an NGINX Plus feature", accepts=ANY,
                    boolean=False),
    _unset("service-insight-tls-secret", "service insight is an NGINX Plus feature"),
    _off("weight-changes-dynamic-reload", _PLUS + " (dynamic weight changes use the NGINX Plus API)"),
    _off("enable-cert-manager", _CRD),
    _off("enable-external-dns", _CRD),
    _off("enable-oidc", "OIDC policies need NGINX Plus and custom resources"),
    _unset("ingresslink", "BIG-IP IngressLink is not supported; use -external-service"),
    _unset("prometheus-tls-secret", "the metrics endpoint serves plain HTTP only"),
    _unset("proxy", "the kubectl-proxy test mode (no NGINX) is not supported; use -kubeconfig"),
    _unset("spire-agent-address", "NGINX Service Mesh is not supported"),
    _off("enable-internal-routes", "NGINX Service Mesh is not supported"),
    UnsupportedFlag("ssl-dynamic-reload", "certificates are loaded by an NGINX reload (the behaviour of "
                    "-ssl-dynamic-reload=false)", warns=("true",)),
    UnsupportedFlag("enable-telemetry-reporting", "ingressctl never sends telemetry", warns=("true",)),
    _unset("plm-storage-url", _AP),
    _unset("plm-storage-credentials-secret", _AP),
    _unset("plm-storage-ca-secret", _AP),
    _unset("plm-storage-client-ssl-secret", _AP),
    _off("plm-storage-insecure-skip-verify", _AP),
    # Namespaces selected by a label come and go at run time; ingressctl watches a fixed set of namespaces.
    _unset("watch-namespace-label", "namespaces selected by a label are not supported; list them in "
                                    "-watch-namespace"),
)}
