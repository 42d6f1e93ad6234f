"""`controller.ingressClass.setAsDefaultIngress`: the chart's IngressClass, applied to devcluster, is the
class the API server gives an Ingress created without one."""

from __future__ import annotations

from ingressctl.devcluster import DevCluster
from tests.chart.chartlib import Helm, find


def test_set_as_default_ingress_makes_classless_ingresses_ours(helm: Helm) -> None:
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"name": "classless", "namespace": "default"},
               "spec": {"defaultBackend": {"service": {"name": "echo", "port": {"number": 80}}}}}
    for default, expected in ((True, "edge"), (False, None)):
        values = {"controller": {"ingressClass": {"name": "edge", "setAsDefaultIngress": default}}}
        docs = helm.render(values)
        with DevCluster() as cluster:
            cluster.load([find(docs, "IngressClass"), ingress])
            [stored] = cluster.objects("ingresses", "default")
            assert stored["spec"].get("ingressClassName") == expected
