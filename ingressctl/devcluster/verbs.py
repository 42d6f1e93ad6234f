"""The resource verbs of the devcluster's handler: get, list, create, update, patch (the three patch types and
server-side apply), delete and deletecollection, with fault injection, statistics and validating admission
webhooks around them; watch requests go to `watch.WatchStream`.

Guarantees: every write runs the validating webhooks on a dry-run preview of its result first (a denial
changes nothing); responses are built from the stored bytes (`kind`/`apiVersion` prefixed, or a Table for
kubectl's `Accept`); warnings from webhooks and the store go out in one `Warning` header.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from ingressctl.devcluster import apply, errors, printing
from ingressctl.devcluster.admission import AdmissionAttributes, WebhookAdmission
from ingressctl.devcluster.auth import ADMIN
from ingressctl.devcluster.decode import BodyIssues, json_patch_issues, loads_json
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.faults import Call
from ingressctl.devcluster.handler import BaseHandler
from ingressctl.devcluster.managed import manager_of
from ingressctl.devcluster.objects import Matcher, Stored, WriteResult, dumps
from ingressctl.devcluster.request import (
    PATCH_TYPES,
    ResourceRequest,
    bool_param,
    field_validation,
    int_param,
    warning_headers,
)
from ingressctl.devcluster.resources import Obj, ResourceKind
from ingressctl.devcluster.selectors import SelectorError, parse_field_selector, parse_label_selector
from ingressctl.devcluster.watch import WatchEncoding, WatchStream


class ResourceHandler(BaseHandler):
    """The verbs of resource requests (`_verb_<verb>`), given a routed `ResourceRequest`."""

    # ------------------------------------------------------------------------------------------- resources
    def _view(self, kind: ResourceKind) -> Callable[[Stored], Obj] | None:
        if kind.from_storage is None:
            return None
        convert = kind.from_storage
        return lambda s: convert(s.parse())

    def _item_bytes(self, kind: ResourceKind, stored: Stored) -> bytes:
        """An object as a list item (no kind/apiVersion, like the API server)."""
        if kind.from_storage is not None:
            return dumps(kind.from_storage(stored.parse()))
        return stored.body

    def _object_bytes(self, kind: ResourceKind, stored: Stored) -> bytes:
        """A standalone object (kind and apiVersion first)."""
        body = self._item_bytes(kind, stored)
        prefix = b'{"kind":"%s","apiVersion":"%s"' % (kind.kind.encode(), kind.api_version.encode())
        return prefix + (b"," + body[1:] if len(body) > 2 else b"}")

    def _object_dict(self, kind: ResourceKind, stored: Stored) -> Obj:
        obj: Obj = json.loads(self._item_bytes(kind, stored))
        return obj

    def _serve_resource(self, req: ResourceRequest) -> None:
        srv = self.server
        raw = b""
        if req.verb in ("create", "update", "patch", "delete", "deletecollection"):
            raw = self._read_body()
            self._body_read = True
        end = srv.stats.begin(Call(req.verb, req.resource, req.namespace, req.subresource), req.kind.group)
        try:
            delay = srv.faults.latency_for(req.verb, req.resource)
            if delay:
                time.sleep(delay)
            fault = srv.faults.fault_for(req.verb, req.resource)
            if fault is not None:
                raise errors.server_fault(fault.status, fault.retry_after)
            answer = srv.answer_handlers.get(req.resource) if req.verb == "create" else None
            if answer is not None:
                self._send_json(201, answer(self.user, req.namespace, req.name, self._json_body(raw)))
            elif req.kind.subresource(req.subresource) is not None:
                raise errors.resource_not_found()   # a subresource nothing answers here
            else:
                getattr(self, "_verb_" + req.verb)(req, raw)
        finally:
            end()

    def _manager(self, req: ResourceRequest) -> str:
        """The field manager of a non-apply write (fieldManager, else the User-Agent's product)."""
        return manager_of(req.query.get("fieldManager", ""), self.headers.get("User-Agent", ""))

    def _dry_run(self, req: ResourceRequest) -> bool:
        value = req.query.get("dryRun", "")
        if value and value != "All":
            raise errors.bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
        return value == "All"

    def _matcher(self, req: ResourceRequest) -> Matcher:
        try:
            labels = parse_label_selector(req.query.get("labelSelector"))
            fields = parse_field_selector(req.query.get("fieldSelector"), req.kind.all_field_getters())
        except SelectorError as e:
            raise errors.bad_request(str(e)) from None
        return Matcher(labels, fields, self._view(req.kind))

    def _respond_object(self, code: int, req: ResourceRequest, stored: Stored,
                        headers: dict[str, str] | None = None) -> None:
        version = printing.wants_table(self.headers.get("Accept", ""))
        if version:
            self._send(code, dumps(printing.table(req.kind, [self._object_dict(req.kind, stored)],
                                                  version=version,
                                                  include_object=req.query.get("includeObject", "Metadata"),
                                                  list_meta={"resourceVersion": str(stored.rv)})),
                       headers=headers)
            return
        self._send(code, self._object_bytes(req.kind, stored), headers=headers)

    def _verb_get(self, req: ResourceRequest, raw: bytes) -> None:
        stored = self.server.store.get(req.kind, req.namespace, req.name)
        self._respond_object(200, req, stored)

    def _verb_list(self, req: ResourceRequest, raw: bytes) -> None:
        result = self.server.store.list_page(
            req.kind, req.namespace, matcher=self._matcher(req), limit=int_param(req.query, "limit"),
            continue_token=req.query.get("continue", ""),
            resource_version=req.query.get("resourceVersion", ""),
            resource_version_match=req.query.get("resourceVersionMatch", ""))
        meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
        if result.continue_token:
            meta["continue"] = result.continue_token
        if result.remaining is not None:
            meta["remainingItemCount"] = result.remaining
        version = printing.wants_table(self.headers.get("Accept", ""))
        if version:
            objs = [self._object_dict(req.kind, s) for s in result.items]
            self._send_json(200, printing.table(req.kind, objs, version=version, list_meta=meta,
                                                include_object=req.query.get("includeObject", "Metadata")))
            return
        kind = req.kind
        head = b'{"kind":"%s","apiVersion":"%s","metadata":%s,"items":[' % (
            kind.list_kind.encode(), kind.api_version.encode(), dumps(meta))
        body = b",".join(self._item_bytes(kind, s) for s in result.items)
        self._send(200, head + body + b"]}")

    # ------------------------------------------------------------------------------------------- admission
    def _admission(self, req: ResourceRequest, operation: str) -> WebhookAdmission | None:
        adm = self.server.admission
        return adm if adm is not None and adm.wanted(req.kind, req.subresource, operation) else None

    def _admit(self, adm: WebhookAdmission, req: ResourceRequest, operation: str, new: Stored | None,
               old: Stored | None, dry_run: bool) -> None:
        """Send the write's preview (and the current object) to the matching webhooks; raises on a denial."""
        def full(s: Stored | None) -> Obj | None:
            if s is None:
                return None
            kind = req.kind
            return {"apiVersion": kind.api_version, "kind": kind.kind, **self._object_dict(kind, s)}

        obj, old_obj = full(new), full(old)
        meta = (obj or old_obj or {}).get("metadata") or {}
        user = None if self.user is ADMIN else {"username": self.user.name, "uid": self.user.uid,
                                                 "groups": list(self.user.groups)}
        self._warnings.extend(adm.admit(AdmissionAttributes(
            req.kind, req.subresource, operation, str(meta.get("namespace") or req.namespace),
            str(meta.get("name") or req.name), obj, old_obj, dry_run, user)))

    def _warning_headers(self, warnings: list[str]) -> dict[str, str] | None:
        """The admission webhooks' warnings, then the store's, as one Warning header."""
        return warning_headers([*self._warnings, *warnings])

    def _current(self, req: ResourceRequest) -> Stored | None:
        try:
            return self.server.store.get(req.kind, req.namespace, req.name)
        except StatusError:
            return None

    def _verb_create(self, req: ResourceRequest, raw: bytes) -> None:
        body = self._json_body(raw)
        dry_run = self._dry_run(req)
        validation = field_validation(req.query)
        adm = self._admission(req, "CREATE")
        if adm is not None:
            preview = self.server.store.create(req.kind, req.namespace, body, dry_run=True,
                                               field_validation=validation, issues=self._body_issues,
                                          manager=self._manager(req)).stored
            self._admit(adm, req, "CREATE", preview, None, dry_run)
            if isinstance(body, dict) and not (body.get("metadata") or {}).get("name"):
                # generateName: store the name the webhooks saw
                body = {**body, "metadata": {**(body.get("metadata") or {}), "name": preview.name}}
        result = self.server.store.create(req.kind, req.namespace, body, dry_run=dry_run,
                                          field_validation=validation, issues=self._body_issues,
                                          manager=self._manager(req))
        self._respond_object(201, req, result.stored, self._warning_headers(result.warnings))

    def _verb_update(self, req: ResourceRequest, raw: bytes) -> None:
        body = self._json_body(raw)
        adm = self._admission(req, "UPDATE") or self._admission(req, "CREATE")
        if adm is not None:
            old = self._current(req)
            preview = self.server.store.update(req.kind, req.namespace, req.name, body,
                                               subresource=req.subresource, dry_run=True,
                                               field_validation=field_validation(req.query),
                                               issues=self._body_issues, manager=self._manager(req)).stored
            self._admit(adm, req, "UPDATE" if old is not None else "CREATE", preview, old, self._dry_run(req))
        result = self.server.store.update(req.kind, req.namespace, req.name, body,
                                          subresource=req.subresource,
                                          dry_run=self._dry_run(req),
                                          field_validation=field_validation(req.query),
                                          issues=self._body_issues, manager=self._manager(req))
        self._respond_object(201 if result.created else 200, req, result.stored,
                             self._warning_headers(result.warnings))

    def _verb_patch(self, req: ResourceRequest, raw: bytes) -> None:
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        patch_type = PATCH_TYPES.get(ctype)
        if ctype == apply.CONTENT_TYPE:
            self._server_side_apply(req, raw)
            return
        if patch_type is None:
            raise errors.unsupported_media_type(ctype)
        if patch_type == "strategic" and not req.kind.strategic_merge:
            raise StatusError(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                              "format - accepted media types include: application/json-patch+json, "
                              "application/merge-patch+json, application/apply-patch+yaml", {})
        try:
            patch, issues = loads_json(raw) if raw.strip() else (None, BodyIssues())
        except (ValueError, UnicodeDecodeError) as e:
            raise errors.bad_request(f"error decoding patch: {e}") from None
        if patch is None:
            raise errors.bad_request("the patch body is empty")
        if patch_type == "json":
            issues = json_patch_issues(patch, issues)
        adm = self._admission(req, "UPDATE")
        if adm is not None:
            old = self._current(req)
            preview = self.server.store.patch(req.kind, req.namespace, req.name, patch_type, patch,
                                              subresource=req.subresource, dry_run=True,
                                              view=self._view(req.kind),
                                              field_validation=field_validation(req.query),
                                              issues=issues, manager=self._manager(req)).stored
            self._admit(adm, req, "UPDATE", preview, old, self._dry_run(req))
        result = self.server.store.patch(req.kind, req.namespace, req.name, patch_type, patch,
                                         subresource=req.subresource, dry_run=self._dry_run(req),
                                         view=self._view(req.kind),
                                         field_validation=field_validation(req.query), issues=issues,
                                         manager=self._manager(req))
        self._respond_object(200, req, result.stored, self._warning_headers(result.warnings))

    def _server_side_apply(self, req: ResourceRequest, raw: bytes) -> None:
        def run(dry_run: bool) -> tuple[WriteResult, bool]:
            return apply.server_side_apply(
                self.server.store, req.kind, req.namespace, req.name, raw,
                manager=req.query.get("fieldManager", ""), force=bool_param(req.query, "force") is True,
                subresource=req.subresource, dry_run=dry_run, view=self._view(req.kind),
                field_validation=field_validation(req.query))

        old = self._current(req)
        adm = self._admission(req, "CREATE" if old is None else "UPDATE")
        if adm is not None:   # admission webhooks see the applied result, as for any other write
            preview, created = run(True)
            self._admit(adm, req, "CREATE" if created else "UPDATE", preview.stored, old, self._dry_run(req))
        result, created = run(self._dry_run(req))
        self._respond_object(201 if created else 200, req, result.stored,
                             self._warning_headers(result.warnings))

    def _delete_options(self, req: ResourceRequest, raw: bytes) -> dict[str, Any]:
        if not raw.strip():
            return {}
        opts = self._json_body(raw)
        if not isinstance(opts, dict):
            raise errors.bad_request("DeleteOptions must be a JSON object")
        return opts

    def _verb_delete(self, req: ResourceRequest, raw: bytes) -> None:
        opts = self._delete_options(req, raw)
        pre = opts.get("preconditions") or {}
        if not isinstance(pre, dict):
            raise errors.bad_request("preconditions must be an object")
        dry_run = self._dry_run(req) or opts.get("dryRun") == ["All"]
        adm = self._admission(req, "DELETE")
        old = self._current(req) if adm is not None else None
        if adm is not None and old is not None:
            self._admit(adm, req, "DELETE", None, old, dry_run)
        result = self.server.store.delete(req.kind, req.namespace, req.name,
                                          precondition_uid=pre.get("uid") or "",
                                          precondition_rv=pre.get("resourceVersion") or "", dry_run=dry_run)
        kind = req.kind
        headers = self._warning_headers([])
        if kind.return_deleted_object or not result.deleted:
            self._respond_object(200, req, result.stored, headers)
            return
        details = {"name": req.name, "kind": kind.plural, "uid": result.stored.uid}
        if kind.group:
            details["group"] = kind.group
        self._send(200, dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                               "details": details}), headers=headers)

    def _verb_deletecollection(self, req: ResourceRequest, raw: bytes) -> None:
        self._delete_options(req, raw)
        deleted = self.server.store.delete_collection(req.kind, req.namespace, matcher=self._matcher(req),
                                                      dry_run=self._dry_run(req))
        kind = req.kind
        head = b'{"kind":"%s","apiVersion":"%s","metadata":{"resourceVersion":"%d"},"items":[' % (
            kind.list_kind.encode(), kind.api_version.encode(), self.server.store.resource_version)
        self._send(200, head + b",".join(self._item_bytes(kind, s) for s in deleted) + b"]}")

    # ------------------------------------------------------------------------------------------- watch
    def _verb_watch(self, req: ResourceRequest, raw: bytes) -> None:
        WatchStream(self, req, WatchEncoding(self._matcher(req), self._view(req.kind), self._object_dict,
                                             self._object_bytes)).run()
