"""OpenAPI v3 documents, as kube-apiserver serves them, for the kinds of established CustomResourceDefinitions
and (paths only) for the built-in kinds.

`/openapi/v3` lists one document per group/version served (with a content hash in its URL, as the API server
does). A CRD group/version's document holds the paths of its kinds (their write operations accept the
`fieldValidation` query parameter) and each kind's schema tagged with `x-kubernetes-group-version-kind`; with
them kubectl knows that the server validates fields itself and `kubectl explain` describes custom resources.
A built-in group/version's document (`api/v1`, `apis/networking.k8s.io/v1`, ...) holds only its kinds'
operations with the `fieldValidation` parameter and the kind's `x-kubernetes-group-version-kind`, so that
kubectl knows the server validates fields (and prints no "cannot perform warn validation" notice); it has no
schemas and no request bodies, so kubectl computes strategic merge patches from its compiled-in types.
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
    builtin = _builtin_paths(store, group, version)
    if not schemas and not builtin:
        return None
    if not schemas:
        return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": builtin,
                "components": {}}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
            "paths": {**builtin, **paths}, "components": {"schemas": schemas}}


def _builtin_paths(store: Store, group: str, version: str) -> dict[str, Any]:
    """The operations of a group/version's built-in kinds (those with a Go type, `ResourceKind.typed`)."""
    paths: dict[str, Any] = {}
    for kind in store.registry.in_group_version(group, version):
        if not kind.typed:
            continue
        gvk = {"group": group, "version": version, "kind": kind.kind}

        def op(action: str, writes: bool, gvk: dict[str, str] = gvk) -> Obj:
            out: Obj = {"x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk,
                        "responses": {"200": {"description": "OK"}}}
            if writes:
                out["parameters"] = [_PARAM_FIELD_VALIDATION]
            return out

        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        scope = f"{base}/namespaces/{{namespace}}" if kind.namespaced else base
        verbs = set(kind.verbs)
        collection: Obj = {}
        if "list" in verbs:
            collection["get"] = op("list", False)
        if "create" in verbs:
            collection["post"] = op("post", True)
        if collection:
            paths[f"{scope}/{kind.plural}"] = collection
        item: Obj = {}
        for verb, method in (("get", "get"), ("update", "put"), ("patch", "patch"), ("delete", "delete")):
            if verb in verbs:
                item[method] = op(method, verb in ("update", "patch"))
        if item:
            paths[f"{scope}/{kind.plural}/{{name}}"] = item
    return paths


def root_document(store: Store) -> dict[str, Any]:
    """`/openapi/v3`: the group/versions served, each with the URL of its document."""
    gvs = sorted({(crd["spec"]["group"], v["name"]) for crd in _established(store)
                  for v in crd["spec"].get("versions") or [] if v.get("served")}
                 | {(k.group, k.version) for k in store.registry.kinds if k.typed})
    paths = {}
    for group, version in gvs:
        doc = group_version_document(store, group, version)
        if doc is None:
            continue
        digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest().upper()
        key = f"apis/{group}/{version}" if group else f"api/{version}"
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return {"paths": paths}
