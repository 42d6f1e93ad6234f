"""The objects a migration report reads: Ingresses and IngressClasses from manifest files or from a cluster.

Guarantees:
- `read_files(directory)`: every `*.yaml`, `*.yml` and `*.json` file under the directory (recursively, in
  sorted path order), multi-document YAML (comments, `---`, empty documents), `List` kinds (`kind: List`,
  `IngressList`, ...) flattened. Ingresses and IngressClasses are kept with where they were found (the path
  relative to the directory, the document's number from 1, the item's index in a List); every other
  document is listed in `skipped` with the reason, never an error. A file that cannot be read or parsed
  raises `SourceError` naming the file (and the line, for YAML).
- `read_cluster(client, namespace)`: every IngressClass and every Ingress (of one namespace, or of all),
  listed as the controller's informers list them: consistent lists in pages (500 first, then up to 1,000), a
  continue token that expires restarting the list once unpaginated. An IngressClass list the client may not
  make (RBAC) is a note, not an error; a failed Ingress list raises `SourceError`.
- Nothing is changed: the objects are read as they are (no defaulting), so the report sees what the
  controller would see.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.reflector import DEFAULT_MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE
from ingressctl.k8s.resource import INGRESSCLASSES, INGRESSES

SUFFIXES = (".yaml", ".yml", ".json")
INGRESS_API_VERSION = "networking.k8s.io/v1"


class SourceError(Exception):
    """Input that cannot be read: the message names the file or the request."""


@dataclass(frozen=True)
class Found:
    """An object and where it was found ("" for a cluster)."""

    obj: dict[str, Any]
    where: str = ""


@dataclass(frozen=True)
class Skipped:
    """A document that is not an Ingress or an IngressClass."""

    where: str
    kind: str
    api_version: str
    name: str
    reason: str


@dataclass
class Inputs:
    origin: str                                   # "files" or "cluster"
    ingresses: list[Found] = field(default_factory=list)
    ingress_classes: list[Found] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _files(directory: str) -> list[str]:
    if not os.path.isdir(directory):
        raise SourceError(f"{directory}: not a directory")
    found: list[str] = []
    for root, dirs, names in os.walk(directory):
        dirs.sort()
        found.extend(os.path.join(root, n) for n in names if n.endswith(SUFFIXES))
    return sorted(found)


def _documents(path: str) -> list[Any]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise SourceError(f"{path}: cannot read: {e}") from None
    if path.endswith(".json"):
        try:
            return [json.loads(text)] if text.strip() else []
        except json.JSONDecodeError as e:
            raise SourceError(f"{path}: invalid JSON: {e}") from None
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        raise SourceError(f"{path}: invalid YAML: {e}") from None


def _meta_name(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


def _take(doc: Any, where: str, out: Inputs) -> None:
    if doc is None:
        return
    if not isinstance(doc, dict):
        out.skipped.append(Skipped(where, "", "", "", f"not a Kubernetes object (a {type(doc).__name__})"))
        return
    kind, api_version = str(doc.get("kind") or ""), str(doc.get("apiVersion") or "")
    if kind.endswith("List") and isinstance(doc.get("items"), list):
        for i, item in enumerate(doc["items"]):
            _take(item, f"{where}, item {i}", out)
        return
    if not kind or not api_version:
        out.skipped.append(Skipped(where, kind, api_version, _meta_name(doc),
                                   "not a Kubernetes object (no apiVersion or kind)"))
        return
    group = api_version.rpartition("/")[0]
    if kind == "Ingress" and group in ("networking.k8s.io", "extensions"):
        out.ingresses.append(Found(doc, where))  # an old apiVersion is reported with the Ingress
    elif kind == "IngressClass" and group == "networking.k8s.io":
        out.ingress_classes.append(Found(doc, where))
    else:
        out.skipped.append(Skipped(where, kind, api_version, _meta_name(doc), "not an Ingress"))


def read_files(directory: str) -> Inputs:
    """See the module docstring."""
    out = Inputs("files")
    for path in _files(directory):
        rel = os.path.relpath(path, directory)
        for i, doc in enumerate(_documents(path)):
            _take(doc, f"{rel}, document {i + 1}", out)
    return out


def read_cluster(client: KubeClient, namespace: str | None) -> Inputs:
    """See the module docstring."""
    out = Inputs("cluster")
    try:
        classes, _ = client.list_all(INGRESSCLASSES, page_size=DEFAULT_PAGE_SIZE,
                                     max_page_size=DEFAULT_MAX_PAGE_SIZE)
        out.ingress_classes = [Found(c) for c in classes]
    except ApiError as e:
        out.notes.append(f"cannot list IngressClasses ({e}): only the --ingress-class and "
                         "the legacy annotation kubernetes.io/ingress.class: nginx count as served")
    try:
        items, _ = client.list_all(INGRESSES, namespace, page_size=DEFAULT_PAGE_SIZE,
                                   max_page_size=DEFAULT_MAX_PAGE_SIZE)
    except ApiError as e:
        where = f"in namespace {namespace}" if namespace else "in all namespaces"
        raise SourceError(f"cannot list Ingresses {where}: {e}") from e
    for item in items:
        item.setdefault("apiVersion", INGRESS_API_VERSION)
        item.setdefault("kind", "Ingress")
    out.ingresses = [Found(i) for i in items]
    return out
