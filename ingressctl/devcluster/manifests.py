"""Reading Kubernetes manifests: YAML or JSON files, multi-document, `kind: List` flattened.

Directories are read recursively in sorted path order (files ending .yaml, .yml or .json); explicit files are
read in the order given. Errors name the file and document.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import yaml

_SUFFIXES = (".yaml", ".yml", ".json")


class ManifestError(ValueError):
    """A manifest file that cannot be read or does not hold Kubernetes objects."""


def manifest_files(paths: Sequence[str]) -> list[str]:
    files: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            found: list[str] = []
            for root, dirs, names in os.walk(path):
                dirs.sort()
                found.extend(os.path.join(root, n) for n in names if n.endswith(_SUFFIXES))
            files.extend(sorted(found))
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise ManifestError(f"{path}: no such file or directory")
    return files


def _flatten(doc: Any, where: str) -> Iterator[dict[str, Any]]:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise ManifestError(f"{where}: expected a Kubernetes object, got {type(doc).__name__}")
    if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        for i, item in enumerate(doc["items"]):
            yield from _flatten(item, f"{where} item {i}")
        return
    if not doc.get("apiVersion") or not doc.get("kind"):
        raise ManifestError(f"{where}: apiVersion and kind are required")
    yield doc


def read_manifests(paths: Sequence[str]) -> list[dict[str, Any]]:
    """All objects in the given files and directories, in load order: CustomResourceDefinitions first."""
    out: list[dict[str, Any]] = []
    for path in manifest_files(paths):
        try:
            with open(path, encoding="utf-8") as f:
                docs = list(yaml.safe_load_all(f))
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as e:
            raise ManifestError(f"{path}: {e}") from None
        for i, doc in enumerate(docs):
            out.extend(_flatten(doc, f"{path} document {i + 1}"))
    # CustomResourceDefinitions first (stable otherwise), so that the kinds they define are known whatever
    # order the files were named in.
    out.sort(key=lambda o: o.get("kind") != "CustomResourceDefinition")
    return out
