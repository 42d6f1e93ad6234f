"""`--ingress-nginx-compat` through the real controller, devcluster and a real NGINX: the IngressClasses of
ingress-nginx (controller `k8s.io/ingress-nginx`) and the legacy `kubernetes.io/ingress.class: nginx` are
served only with the flag; a missing ingress-nginx class does not stop the start and its Ingresses are served
as soon as it appears (and removed when it goes); the primary class may be ingress-nginx's own; what is not
honoured gets a Warning event or a `Rejected` one and is counted in the metric."""

from __future__ import annotations

import re

import pytest

from ingressctl.app.root import StartupError
from tests.helpers import wait_until
from tests.integration.harness import Env, rule
from tests.integration.test_metrics_controller import metrics_port, scrape

pytestmark = pytest.mark.integration

N = "nginx.ingress.kubernetes.io/"
INGRESS_NGINX = "k8s.io/ingress-nginx"


def ingress_class(env: Env, name: str, controller: str) -> None:
    """Create the IngressClass, replacing one of that name (`spec.controller` is immutable)."""
    from ingressctl.k8s.errors import ApiError

    try:
        env.delete("ingressclasses", name, None)
    except ApiError as e:
        assert e.is_not_found
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": name},
                "spec": {"controller": controller}})


def legacy_ingress(env: Env, name: str, host: str, cls: str = "nginx") -> None:
    """An Ingress with only the legacy class annotation (as charts written for ingress-nginx < 0.22 do)."""
    body = env.ingress(name, [rule(host, ("/", "web"))], cls=None, apply=False)
    body["metadata"]["annotations"] = {"kubernetes.io/ingress.class": cls}
    env.apply(body)


def setup(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    # ingress-nginx's chart left the `nginx` class behind; ingressctl gets a class of its own.
    ingress_class(env, "nginx", INGRESS_NGINX)
    ingress_class(env, "ingressctl", "nginx.org/ingress-controller")
    env.ingress("own", [rule("own.example.com", ("/", "web"))], cls="ingressctl")
    env.ingress("old", [rule("old.example.com", ("/", "web"))], cls="nginx")
    legacy_ingress(env, "legacy", "legacy.example.com")


def test_ingress_nginx_classes_are_served_only_with_the_flag(env: Env) -> None:
    setup(env)
    off = env.controller(ingress_class="ingressctl")
    off.wait_backend("own.example.com", "/", "web")
    off.wait_idle()
    assert off.get("old.example.com").status == 404
    assert off.get("legacy.example.com").status == 404
    off.stop()

    on = env.controller(ingress_class="ingressctl", ingress_nginx_compat=True)
    for host in ("own.example.com", "old.example.com", "legacy.example.com"):
        on.wait_backend(host, "/", "web")
    # Another controller's class stays another controller's.
    ingress_class(env, "other", "example.com/other")
    env.ingress("others", [rule("others.example.com", ("/", "web"))], cls="other")
    legacy_ingress(env, "others-legacy", "others-legacy.example.com", cls="other")
    on.wait_idle()
    assert on.get("others.example.com").status == 404
    assert on.get("others-legacy.example.com").status == 404


def test_a_missing_ingress_nginx_class_does_not_stop_the_start_and_is_served_once_it_exists(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("good", [rule("good.example.com", ("/", "web"))])
    env.ingress("app", [rule("app.example.com", ("/", "web"))], cls="public")
    c = env.controller(ingress_nginx_compat=True)
    c.wait_backend("good.example.com", "/", "web")
    c.wait_idle()
    assert c.get("app.example.com").status == 404          # class "public" does not exist yet
    ingress_class(env, "public", INGRESS_NGINX)
    c.wait_backend("app.example.com", "/", "web")           # served without the Ingress changing
    ingress_class(env, "public", "example.com/someone-else")
    c.wait_status("app.example.com", "/", 404)              # now another controller's: removed
    ingress_class(env, "public", INGRESS_NGINX)
    c.wait_backend("app.example.com", "/", "web")
    env.delete("ingressclasses", "public", None)
    c.wait_status("app.example.com", "/", 404)
    assert c.get("good.example.com").backend == "web"


def test_the_primary_class_may_be_ingress_nginx_s_own_only_with_the_flag(env: Env) -> None:
    ingress_class(env, "nginx", INGRESS_NGINX)
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("old", [rule("old.example.com", ("/", "web"))], cls="nginx")
    with pytest.raises(StartupError, match=re.escape(
            "IngressClass 'nginx' has spec.controller 'k8s.io/ingress-nginx'; this controller serves "
            "'nginx.org/ingress-controller'")):
        env.controller()
    c = env.controller(ingress_nginx_compat=True)
    c.wait_backend("old.example.com", "/", "web")


def test_what_is_not_honoured_is_named_in_events_and_counted(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    ingress_class(env, "nginx", INGRESS_NGINX)
    env.ingress("partly", [rule("partly.example.com", ("/", "web"))], annotations={
        N + "proxy-body-size": "8m", N + "enable-opentelemetry": "true", N + "x-made-up": "1",
        "nginx.org/client-max-body-size": "2m"})
    env.ingress("refused", [rule("refused.example.com", ("/", "web"))], annotations={
        N + "server-alias": "other.example.com", N + "enable-modsecurity": "true"})
    c = env.controller(ingress_nginx_compat=True, enable_prometheus_metrics=True,
    prometheus_metrics_listen_port=0)
    c.wait_backend("partly.example.com", "/", "web")
    e = env.wait_event("partly", "AddedOrUpdatedWithWarning", f"{N}enable-opentelemetry ignored")
    assert e["type"] == "Warning"
    assert f"{N}x-made-up ignored (not an ingress-nginx annotation ingressctl knows)" in e["message"]
    assert (f"annotation nginx.org/client-max-body-size wins over {N}proxy-body-size" in e["message"])
    rejected = env.wait_event("refused", "Rejected",
                              f"annotations.{N}server-alias: Forbidden: not supported by ingressctl: extra "
                              "`server_name`s could capture hosts")
    assert f"annotations.{N}enable-modsecurity: Forbidden" in rejected["message"]
    assert c.get("refused.example.com").status == 404

    def counts() -> dict[tuple[str, str], float]:
        samples = scrape(metrics_port(c)).get("nginx_ingress_controller_ingress_nginx_annotations", [])
        return {(labels["status"], labels["annotation"]): value for labels, value in samples}

    assert wait_until(lambda: counts() == {
        ("translated", N + "proxy-body-size"): 1, ("ignored", N + "enable-opentelemetry"): 1,
        ("ignored", "other"): 1, ("refused", N + "server-alias"): 1,
        ("refused", N + "enable-modsecurity"): 1},
        "the metric counts the annotations")
    env.delete("ingresses", "refused")
    assert wait_until(lambda: ("refused", N + "server-alias") not in counts(),
                      "a deleted Ingress is not counted")
