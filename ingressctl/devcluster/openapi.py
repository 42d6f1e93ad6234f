"""OpenAPI v3 documents for the kinds of established CustomResourceDefinitions, as kube-apiserver serves them.

`/openapi/v3` lists one document per group/version that CRDs serve (with a content hash in its URL, as the
API server does); each document holds the paths of its kinds (their write operations accept the
`fieldValidation` query parameter) and each kind's schema tagged with `x-kubernetes-group-version-kind`. With
them kubectl knows that the server validates fields itself and `kubectl explain` describes custom resources.
Built-in kinds have no document here: kubectl then treats them as it always did with devcluster.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from ingressctl.devcluster.crd import GROUP, PLURAL
from ingressctl.devcluster.resources import Obj
from ingressctl.devcluster.store import Store

_PARAM_FIELD_VALIDATION = {"name": "fieldValidation", "in": "query",
                           "schema": {"type": "string", "uniqueItems": True},
                           "description": "Ignore, Warn or Strict: what the server does with unknown fields."}


def _established(store: Store) -> list[Obj]:
    kind = store.registry.by_path(GROUP, "v1", PLURAL)
    if kind is None:
        return []
    bucket = store.bucket(kind)
    with store.lock:
        stored = list(bucket.objects.values())
    out = []
    for s in stored:
        crd = s.parse()
        status = crd.get("status") or {}
        established = any(c.get("type") == "Established" and c.get("status") == "True"
                          for c in status.get("conditions") or [])
        if established and not crd["metadata"].get("deletionTimestamp"):
            out.append(crd)
    return out


def _schema_name(group: str, version: str, kind: str) -> str:
    return ".".join([*reversed(group.split(".")), version, kind])


def group_version_document(store: Store, group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group/version served by CRDs (None when no CRD serves it)."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for crd in _established(store):
        spec = crd["spec"]
        if spec.get("group") != group:
            continue
        names = crd["status"].get("acceptedNames") or spec["names"]
        for v in spec.get("versions") or []:
            if v.get("name") != version or not v.get("served"):
                continue
            gvk = {"group": group, "version": version, "kind": names["kind"]}
            name = _schema_name(group, version, names["kind"])
            body = copy.deepcopy((v.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"})
            body["x-kubernetes-group-version-kind"] = [gvk]
            schemas[name] = body
            ref = {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}

            def op(action: str, writes: bool, ref: dict[str, Any] = ref, gvk: dict[str, str] = gvk) -> Obj:
                out: Obj = {"x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk,
                            "responses": {"200": {"description": "OK", **ref}}}
                if writes:
                    out["parameters"] = [_PARAM_FIELD_VALIDATION]
                    out["requestBody"] = ref
                return out

            base = f"/apis/{group}/{version}"
            scope = f"{base}/namespaces/{{namespace}}" if spec.get("scope") == "Namespaced" else base
            plural = names["plural"]
            paths[f"{scope}/{plural}"] = {"get": op("list", False), "post": op("post", True)}
            paths[f"{scope}/{plural}/{{name}}"] = {"get": op("get", False), "put": op("put", True),
                                                    "patch": op("patch", True), "delete": op("delete", False)}
            if "status" in (v.get("subresources") or {}):
                paths[f"{scope}/{plural}/{{name}}/status"] = {
                    "get": op("get", False), "put": op("put", True), "patch": op("patch", True)}
            if spec.get("scope") == "Namespaced":
                paths[f"{base}/{plural}"] = {"get": op("list", False)}
    if not schemas:
        return None
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
            "paths": paths, "components": {"schemas": schemas}}


def root_document(store: Store) -> dict[str, Any]:
    """`/openapi/v3`: the group/versions CRDs serve, each with the URL of its document."""
    gvs = sorted({(crd["spec"]["group"], v["name"]) for crd in _established(store)
                  for v in crd["spec"].get("versions") or [] if v.get("served")})
    paths = {}
    for group, version in gvs:
        doc = group_version_document(store, group, version)
        if doc is None:
            continue
        digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest().upper()
        paths[f"apis/{group}/{version}"] = {
            "serverRelativeURL": f"/openapi/v3/apis/{group}/{version}?hash={digest}"}
    return {"paths": paths}
