"""The layout's rules (docs/architecture.md, "Layout"), read from the code's imports: no module imports one
that imports it back (through any chain), and each layer imports only the layers below it."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator

import pytest

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "..", "ingressctl")

# folder (or top-level module) -> the folders and modules of the project it may import besides itself
ALLOWED: dict[str, set[str]] = {
    "logging": {"settings"},
    "keys": set(), "settings": set(), "forked": set(), "validation": set(), "secret_types": set(),
    "http_serving": set(), "nic_flags": set(), "flag_values": set(), "startup_hints": {"settings"},
    "k8s": {"logging", "keys"},
    "nginx": {"logging"},
    "devcluster": {"logging", "settings"},
    "configs": {"forked", "keys", "logging", "nginx", "settings", "validation", "secret_types",
                "kinds.ingress"},
    "policies": {"configs", "secret_types", "validation"},
    "controller": {"configs", "forked", "k8s", "keys", "logging", "nginx", "policies", "secret_types",
                   "validation", "kinds.ingress"},
    "kinds": {"configs", "controller", "k8s", "keys", "logging", "nginx", "policies", "secret_types",
              "settings", "validation", "kinds"},
    "metrics": {"http_serving", "k8s", "keys", "logging", "nginx", "kinds.ingress"},
    "health": {"http_serving", "logging"},
    "webhook": {"controller", "devcluster.tlsutil", "http_serving", "k8s", "keys", "kinds", "logging",
                "validation"},
    # The read-only report beside the controller: the controller's own class filter, translator and
    # validation, and devcluster's DefaultIngressClass rule (kube-apiserver's) for manifests not yet applied.
    "migrate_report": {"configs", "controller", "devcluster.default_class", "flag_values", "k8s", "kinds",
                       "logging", "settings"},
}
# The Ingress is the kind the core is built around (the Configuration's, the Configurator's and the
# controller's built-in kind, as in NIC): only these core modules may import it.
INGRESS_IN_CORE = {"configs.configurator", "configs.renderers", "controller.configuration",
                   "controller.controller"}


def _modules() -> dict[str, str]:
    root = os.path.abspath(PACKAGE)
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                out[rel.removesuffix(".__init__") if rel != "__init__" else ""] = path
    return out


MODULES = _modules()


def _imports(path: str) -> Iterator[tuple[str, str]]:
    """(imported module relative to the package, "kubernetes" or "") of every import, wherever it stands
    (TYPE_CHECKING blocks and functions too)."""
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "kubernetes":
                yield "", "kubernetes"
            base = node.module
            names = [f"{base}.{a.name}" if f"{base}.{a.name}".removeprefix("ingressctl.") in MODULES else base
                     for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
            if any(n.split(".")[0] == "kubernetes" for n in names):
                yield "", "kubernetes"
        for name in names:
            if name == "ingressctl" or name.startswith("ingressctl."):
                yield name.removeprefix("ingressctl").removeprefix("."), ""


GRAPH = {m: {t for t, ext in _imports(p) if not ext and t in MODULES and t != m} for m, p in MODULES.items()}


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert _cycles() == []


def _layer(module: str) -> str:
    return module.split(".")[0]


def _allowed(module: str, target: str) -> bool:
    layer, other = _layer(module), _layer(target)
    if layer == other and layer != "kinds":
        return True
    allowed = ALLOWED[layer]
    if other == "kinds" and layer != "kinds":
        if target.startswith("kinds.ingress") and layer in ("configs", "controller"):
            return module in INGRESS_IN_CORE and "kinds.ingress" in allowed
        return "kinds" in allowed or any(target == a or target.startswith(a + ".") for a in allowed)
    return other in allowed or any(target == a or target.startswith(a + ".") for a in allowed)


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    wrong = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() if _layer(m) == layer
                   for t in targets if not _allowed(m, t))
    assert wrong == []


def test_only_the_api_client_imports_the_kubernetes_package() -> None:
    """The controller's one door to `kubernetes` is `k8s/client.py`; devcluster reads the built-in kinds'
    field names from the same package's models (`devcluster/fields.py`), as kube-apiserver's schema."""
    users = sorted(m for m, p in MODULES.items() if any(ext == "kubernetes" for _, ext in _imports(p)))
    assert users == ["devcluster.fields", "k8s.client"]


def test_every_folder_and_top_level_module_has_a_rule_or_is_a_composition_root() -> None:
    tops = {_layer(m) for m in MODULES if m}
    composition = {"app", "cli", "demo", "__main__"}   # they may import anything below them
    assert tops - composition == set(ALLOWED) - {"kinds.ingress"}



def _lines(path: str) -> int:
    with open(path) as f:
        return sum(1 for _ in f)


def test_no_module_is_longer_than_the_house_limit() -> None:
    """About 600 lines a module (docs/architecture.md, "Layout"), with a tenth of margin."""
    long = {m: n for m, p in MODULES.items() if (n := _lines(p)) > 660}
    assert long == {}
