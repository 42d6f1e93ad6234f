"""In-memory object storage with etcd's guarantees as the API server exposes them: the writes.

`Store` is `storage.Storage` (objects, the global resourceVersion, the history, lists and watches) plus every
write. Guarantees:
- Every committed write (create, update, status update, patch, delete, deletion mark) takes the next
  resourceVersion and appends exactly one event. No-op updates commit nothing and keep the object's
  resourceVersion, like a real API server.
- All reads and writes happen under one lock with short critical sections. An object is stored as its compact
  JSON bytes plus the few metadata fields selectors need; lists and watches send those bytes as they are and
  never re-serialise, and the garbage collector has almost nothing to scan however many objects are stored.
  Writers parse a private copy when they need the whole object.
- Creates pass kube-apiserver's mutating admission where a controller can tell (`default_class`: the default
  IngressClass) before defaulting.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from ingressctl.devcluster import default_class, errors
from ingressctl.devcluster.decode import BodyIssues, check_body, go_map, validate_name
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.managed import record_update
from ingressctl.devcluster.metavalidation import object_meta_errors
from ingressctl.devcluster.objects import (
    ADDED,
    DELETED,
    MODIFIED,
    Bucket,
    Event,
    Matcher,
    Stored,
    WriteResult,
    dumps,
    normalise,
    object_key,
)
from ingressctl.devcluster.patch import (
    PatchError,
    PatchFormatError,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from ingressctl.devcluster.resources import Obj, ResourceKind
from ingressctl.devcluster.storage import Storage
from ingressctl.devcluster.strategy import allocate_node_ports

IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_SYSTEM_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")

class Store(Storage):
    """The writes of the store (create, update, patch, delete, bulk load) and its kinds added at run time."""

    # ------------------------------------------------------------------------------------------ dynamic kinds
    def on_commit(self, storage_id: str, hook: Callable[[Event], None]) -> None:
        """Call `hook(event)` after each committed change of the stored kind `storage_id`, with the store lock
        held: it may read and write through the `*_locked` methods and add or remove buckets."""
        self._commit_hooks.setdefault(storage_id, []).append(hook)

    def add_bucket_locked(self, kind: ResourceKind) -> None:
        """Storage for a stored kind added to the registry after start (lock held); kept if it exists."""
        if kind.storage_id not in self._buckets:
            self._buckets[kind.storage_id] = Bucket(kind)
        else:
            self._buckets[kind.storage_id].kind = kind

    def remove_bucket_locked(self, storage_id: str) -> None:
        """Delete every object of a stored kind (one DELETED event each), end its watches and drop its storage
        (lock held)."""
        bucket = self._buckets.get(storage_id)
        if bucket is None:
            return
        for key in list(bucket.keys):
            self._delete_locked(bucket, key, bucket.objects[key])
        for watcher in list(bucket.watchers):
            watcher.end()
        del self._buckets[storage_id]

    def convert_stored_locked(self, kind: ResourceKind, convert: Callable[[Obj], Obj]) -> int:
        """Pass every stored object of `kind` through `convert` (lock held), keeping its resourceVersion and
        committing no event: what a real API server does when it reads objects back with a changed schema
        (pruned and defaulted on decode). Returns how many objects changed."""
        bucket = self.bucket(kind)
        changed = 0
        for key in bucket.keys:
            cur = bucket.objects[key]
            obj = cur.parse()
            new = normalise(convert(obj))
            new["metadata"]["resourceVersion"] = str(cur.rv)
            if new != obj:
                bucket.objects[key] = Stored(dumps(new), cur.rv, new["metadata"])
                changed += 1
        return changed

    def remove_finalizer_locked(self, kind: ResourceKind, name: str, finalizer: str) -> None:
        """Drop `finalizer` from a cluster-scoped object (lock held); the last one gone deletes a marked
        object, as when a controller finishes its cleanup."""
        cur = self.bucket(kind).objects.get(name)
        if cur is None:
            return
        obj = cur.parse()
        finalizers = obj["metadata"].get("finalizers") or []
        if finalizer in finalizers:
            obj["metadata"]["finalizers"] = [f for f in finalizers if f != finalizer]
            self._update_locked(kind, "", name, obj, subresource="", dry_run=False, validate=False)

    def _admit(self, kind: ResourceKind, obj: Obj, old: Obj | None, subresource: str) -> None:
        """ObjectMeta's validation and the kind's (after defaulting): any field error refuses the write with
        422 Invalid. Names are checked on create only (they cannot change)."""
        causes = [] if subresource else \
            object_meta_errors(kind.storage_id, obj["metadata"], names=old is None)
        if kind.validate is not None:
            causes += kind.validate(obj, old, subresource)
        if causes:
            raise errors.invalid(kind.kind, kind.group, obj["metadata"].get("name", ""), causes)

    def _allocate(self, stored_kind: ResourceKind, obj: Obj, old: Obj | None) -> None:
        """Values kube-apiserver's allocators assign (a Service's node ports); lock held."""
        if stored_kind.storage_id == "/services":
            allocate_node_ports(obj, old, lambda: self._parsed_objects("/services"), self._rng)

    def _parsed_objects(self, storage_id: str) -> list[Obj]:
        """Private copies of every object of a stored kind (for admission; lock held)."""
        bucket = self._buckets.get(storage_id)
        return [] if bucket is None else [s.parse() for s in bucket.objects.values()]

    # ------------------------------------------------------------------------------------------- checks
    def _namespace_of(self, kind: ResourceKind, url_namespace: str, meta: Obj) -> str:
        if not kind.namespaced:
            meta.pop("namespace", None)
            return ""
        body_ns = meta.get("namespace") or ""
        if body_ns and url_namespace and body_ns != url_namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                     "sent on the request")
        namespace = url_namespace or body_ns
        if not namespace:
            raise errors.bad_request("the namespace of the object must be set for namespaced resources")
        meta["namespace"] = namespace
        return namespace

    def _require_namespace(self, namespace: str) -> None:
        ns = self._buckets["/namespaces"].objects.get(namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if b'"deletionTimestamp"' in ns.body:
            raise errors.forbidden(f"unable to create new content in namespace {namespace} because it is "
                                   "being terminated")

    def _generate_name(self, bucket: Bucket, namespace: str, prefix: str) -> str:
        for _ in range(16):
            name = prefix + "".join(self._rng.choice(_GENERATE_CHARS) for _ in range(5))
            if object_key(namespace, name) not in bucket.objects:
                return name
        raise StatusError(409, "AlreadyExists", f"could not generate a unique name from {prefix!r}", {})

    # ------------------------------------------------------------------------------------------- writes
    def create(self, kind: ResourceKind, namespace: str, body: Any, *, dry_run: bool = False,
               reset_status: bool = True, field_validation: str = "",
               issues: BodyIssues | None = None, manager: str | None = None) -> WriteResult:
        """Create an object; `manager` (a non-apply writer's field manager) records its managedFields."""
        warnings: list[str] = []
        obj = check_body(kind, body, field_validation=field_validation, warnings=warnings, issues=issues)
        rv = str(obj["metadata"].get("resourceVersion") or "")
        if rv.isdigit() and int(rv) > 0:
            # etcd3's ErrResourceVersionSetOnCreate, which kube-apiserver answers as a plain error (500)
            raise StatusError(500, "", "resourceVersion should not be set on objects to be created", None)
        with self.lock:
            result = self._create_locked(kind, namespace, obj, dry_run=dry_run, reset_status=reset_status,
                                         manager=manager)
        result.warnings = warnings
        return result

    def _create_locked(self, kind: ResourceKind, namespace: str, obj: Obj, *, dry_run: bool,
                       reset_status: bool, validate: bool = True, manager: str | None = None) -> WriteResult:
        bucket = self.bucket(kind)
        meta = obj["metadata"]
        namespace = self._namespace_of(kind, namespace, meta)
        name = meta.get("name") or ""
        if not name:
            prefix = meta.get("generateName") or ""
            if not prefix:
                raise errors.invalid(kind.kind, kind.group, "", [(
                    "metadata.name", "FieldValueRequired",
                    "Required value: name or generateName is required")])
            name = meta["name"] = self._generate_name(bucket, namespace, prefix)
        if not validate:
            validate_name(kind, name)     # validation proper (_admit) checks names with the rest
        if namespace:
            self._require_namespace(namespace)
        key = object_key(namespace, name)
        if key in bucket.objects:
            raise errors.already_exists(kind.plural, kind.group, name)
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "resourceVersion"):
            meta.pop(k, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self._clock()
        stored_kind = bucket.kind
        if stored_kind.generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if stored_kind.has_status and reset_status and stored_kind.reset_status_on_create:
            obj.pop("status", None)
        default_class.admit_create(stored_kind.storage_id, obj, self._parsed_objects)
        if manager is not None:
            record_update(obj, None, manager=manager, api_version=kind.api_version, subresource="",
                          meta=stored_kind.patch_meta, has_status=stored_kind.has_status)
        if stored_kind.default is not None:
            stored_kind.default(obj, None)
        self._allocate(stored_kind, obj, None)
        if validate:
            self._admit(kind, obj, None, "")
        obj = normalise(obj)
        if dry_run:
            return WriteResult(Stored(dumps(obj), 0, obj["metadata"]), created=True)
        return WriteResult(self._commit(bucket, ADDED, key, obj, None).stored, created=True)

    def update(self, kind: ResourceKind, namespace: str, name: str, body: Any, *, subresource: str = "",
               dry_run: bool = False, field_validation: str = "",
               issues: BodyIssues | None = None, manager: str | None = None) -> WriteResult:
        warnings: list[str] = []
        obj = check_body(kind, body, field_validation=field_validation, warnings=warnings, issues=issues)
        with self.lock:
            result = self._update_locked(kind, namespace, name, obj, subresource=subresource, dry_run=dry_run,
                                         manager=manager)
        result.warnings = warnings
        return result

    def _check_identity(self, kind: ResourceKind, namespace: str, name: str, meta: Obj) -> None:
        body_name = meta.get("name") or ""
        if body_name != name:
            raise errors.bad_request(f"the name of the object ({body_name}) does not match the name on "
                                     f"the URL ({name})")
        if kind.namespaced:
            body_ns = meta.get("namespace") or ""
            if body_ns and body_ns != namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)

    def _update_locked(self, kind: ResourceKind, namespace: str, name: str, obj: Obj, *, subresource: str,
                       dry_run: bool, validate: bool = True, manager: str | None = None) -> WriteResult:
        bucket = self.bucket(kind)
        stored_kind = bucket.kind
        meta = obj["metadata"]
        self._check_identity(kind, namespace, name, meta)
        key = object_key(namespace, name)
        cur = bucket.objects.get(key)
        if cur is None:
            if stored_kind.allow_create_on_update and not subresource:
                return self._create_locked(kind, namespace, obj, dry_run=dry_run, reset_status=True,
                                           validate=validate, manager=manager)
            raise errors.not_found(kind.plural, kind.group, name)
        want_rv = meta.get("resourceVersion")
        if want_rv and want_rv != str(cur.rv):
            raise errors.stale_resource_version(kind.plural, kind.group, name)
        want_uid = meta.get("uid")
        if want_uid and want_uid != cur.uid:
            raise errors.conflict(kind.plural, kind.group, name, f"Precondition failed: UID in precondition: "
                                  f"{cur.uid}, UID in object meta: {want_uid}")
        cur_obj = cur.parse()
        cur_meta = cur_obj["metadata"]
        if subresource == "status":
            new = cur.parse()
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            if manager is not None:
                record_update(new, cur_obj, manager=manager, api_version=kind.api_version,
                              subresource="status", meta=stored_kind.patch_meta, has_status=True)
        else:
            new = obj
            for k in _SYSTEM_META:
                if k in cur_meta:
                    meta[k] = cur_meta[k]
                else:
                    meta.pop(k, None)
            if "managedFields" not in meta and "managedFields" in cur_meta:
                meta["managedFields"] = cur_meta["managedFields"]   # a write that sends none keeps them
            if stored_kind.has_status:
                if "status" in cur_obj:
                    new["status"] = cur_obj["status"]
                else:
                    new.pop("status", None)
            if manager is not None:
                record_update(new, cur_obj, manager=manager, api_version=kind.api_version, subresource="",
                              meta=stored_kind.patch_meta, has_status=stored_kind.has_status)
            if stored_kind.default is not None:
                stored_kind.default(new, cur_obj)
            self._allocate(stored_kind, new, cur_obj)
            if stored_kind.generation and new.get("spec") != cur_obj.get("spec"):
                meta["generation"] = int(cur_meta.get("generation", 0)) + 1
        new["metadata"]["resourceVersion"] = cur_meta["resourceVersion"]
        if validate:
            self._admit(kind, new, cur_obj, subresource)
        new = normalise(new)
        if new == cur_obj:
            return WriteResult(cur)
        new_meta = new["metadata"]
        # The last finalizer removed from an object marked for deletion: the object goes now.
        gone = bool(new_meta.get("deletionTimestamp")) and not new_meta.get("finalizers")
        if dry_run:
            return WriteResult(Stored(dumps(new), cur.rv, new_meta), deleted=gone)
        event = self._commit(bucket, DELETED if gone else MODIFIED, key, new, cur)
        return WriteResult(event.stored, deleted=gone)

    def patch(self, kind: ResourceKind, namespace: str, name: str, patch_type: str, patch: Any, *,
              subresource: str = "", dry_run: bool = False,
              view: Callable[[Stored], Obj] | None = None, field_validation: str = "",
              issues: BodyIssues | None = None, manager: str | None = None) -> WriteResult:
        """Apply a patch to the current object and store the result like an update (optimistic concurrency
        included). patch_type: "merge", "json" or "strategic". `view` converts the stored object to the
        requested version.
        """
        bucket = self.bucket(kind)
        with self.lock:
            cur = bucket.objects.get(object_key(namespace, name))
            if cur is None:
                raise errors.not_found(kind.plural, kind.group, name)
            target: Obj = {"kind": kind.kind, "apiVersion": kind.api_version,
                           **(view(cur) if view is not None else cur.parse())}
            try:
                if patch_type == "merge":
                    if not isinstance(patch, dict):
                        raise PatchFormatError("a merge patch must be a JSON object")
                    result = merge_patch(target, patch)
                elif patch_type == "json":
                    result = json_patch(target, patch)
                else:
                    result = strategic_merge_patch(target, patch, bucket.kind.patch_meta)
            except PatchFormatError as e:
                raise errors.bad_request(f"invalid patch: {e}") from None
            except PatchError as e:
                raise errors.unprocessable(str(e)) from None
            if not isinstance(result, dict):
                raise errors.unprocessable("the patch did not produce a JSON object")
            warnings: list[str] = []
            patched = result

            def shown() -> str:     # the patch as kube-apiserver's error shows it (SMP: the patch map)
                return go_map(patch) if patch_type == "strategic" else dumps(patched).decode()

            obj = check_body(kind, result, field_validation=field_validation, warnings=warnings,
                             issues=issues, patch=shown)
            written = self._update_locked(kind, namespace, name, obj, subresource=subresource,
                                          dry_run=dry_run, manager=manager)
        written.warnings = warnings
        return written

    def delete(self, kind: ResourceKind, namespace: str, name: str, *, precondition_uid: str = "",
               precondition_rv: str = "", dry_run: bool = False) -> WriteResult:
        bucket = self.bucket(kind)
        key = object_key(namespace, name)
        with self.lock:
            cur = bucket.objects.get(key)
            if cur is None:
                raise errors.not_found(kind.plural, kind.group, name)
            if precondition_uid and precondition_uid != cur.uid:
                raise errors.conflict(kind.plural, kind.group, name,
                                      f"Precondition failed: UID in precondition: "
                                      f"{precondition_uid}, UID in object meta: {cur.uid}")
            if precondition_rv and precondition_rv != str(cur.rv):
                raise errors.conflict(kind.plural, kind.group, name,
                                      f"Precondition failed: ResourceVersion in "
                                      f"precondition: {precondition_rv}, ResourceVersion in object meta: "
                                      f"{cur.rv}")
            if bucket.kind.storage_id == "/namespaces" and name in IMMORTAL_NAMESPACES:
                raise errors.forbidden(f'namespaces "{name}" is forbidden: this namespace may not be deleted')
            cur_meta = cur.parse()["metadata"]
            own = bucket.kind.delete_finalizer
            if dry_run:
                return WriteResult(cur, deleted=not (cur_meta.get("finalizers") or own))
            if own and not cur_meta.get("deletionTimestamp"):
                # The server's own finalizer: mark the object; its commit hook finishes the deletion.
                return WriteResult(self._mark_deleting(bucket, key, cur, finalizer=own).stored)
            if cur_meta.get("finalizers"):
                if cur_meta.get("deletionTimestamp"):
                    return WriteResult(cur)
                return WriteResult(self._mark_deleting(bucket, key, cur).stored)
            if bucket.kind.storage_id == "/namespaces":
                self._mark_deleting(bucket, key, cur)
                self._delete_namespace_contents(name)
                cur = bucket.objects[key]
            return WriteResult(self._delete_locked(bucket, key, cur).stored, deleted=True)

    def _mark_deleting(self, bucket: Bucket, key: str, cur: Stored, finalizer: str = "") -> Event:
        new = cur.parse()
        meta = new["metadata"]
        if finalizer and finalizer not in (meta.get("finalizers") or []):
            meta["finalizers"] = [*(meta.get("finalizers") or []), finalizer]
        meta["deletionTimestamp"] = self._clock()
        meta["deletionGracePeriodSeconds"] = 0
        if bucket.kind.generation:
            meta["generation"] = int(meta.get("generation", 0)) + 1
        if bucket.kind.storage_id == "/namespaces" and isinstance(new.get("status"), dict):
            new["status"]["phase"] = "Terminating"
        return self._commit(bucket, MODIFIED, key, normalise(new), cur)

    def _delete_locked(self, bucket: Bucket, key: str, cur: Stored) -> Event:
        return self._commit(bucket, DELETED, key, cur.parse(), cur)

    def _delete_namespace_contents(self, namespace: str) -> None:
        for bucket in self._buckets.values():
            if bucket.kind.namespaced:
                lo, hi = bucket.key_range(namespace)
                for key in bucket.keys[lo:hi]:
                    self._delete_locked(bucket, key, bucket.objects[key])

    def delete_collection(self, kind: ResourceKind, namespace: str, *, matcher: Matcher,
                          dry_run: bool = False) -> list[Stored]:
        out = []
        for stored in self.list_page(kind, namespace, matcher=matcher).items:
            try:
                result = self.delete(kind, stored.namespace, stored.name, dry_run=dry_run)
            except StatusError as e:
                if e.code == 404:
                    continue
                raise
            out.append(result.stored)
        return out

    # ------------------------------------------------------------------------------------------- bulk
    def load(self, objects: Iterable[Obj], *, batch: int = 1000) -> int:
        """Create or replace many objects (status kept as given), creating missing namespaces.

        Like a restore of the API server's storage, this skips the kinds' validation (defaulting still
        applies), so tests can hold objects a real API server refuses today. Nested values of the given
        objects are not modified; the store keeps only their serialised form.
        """
        count = 0
        pending: list[tuple[ResourceKind, Obj]] = []
        for raw in objects:
            if not isinstance(raw, dict):
                raise ValueError(f"not an object: {raw!r}")
            kind = self.registry.by_gvk(str(raw.get("apiVersion", "")), str(raw.get("kind", "")))
            if kind is None and pending:    # perhaps a kind defined by a CRD earlier in the batch
                count += self._load_batch(pending)
                pending = []
                kind = self.registry.by_gvk(str(raw.get("apiVersion", "")), str(raw.get("kind", "")))
            if kind is None:
                raise ValueError(f"unknown kind {raw.get('apiVersion')}/{raw.get('kind')}"
                                 " (load the CustomResourceDefinition that defines it, too)")
            pending.append((kind, check_body(kind, raw)))
            if len(pending) >= batch:
                count += self._load_batch(pending)
                pending = []
        if pending:
            count += self._load_batch(pending)
        return count

    def _load_batch(self, batch: list[tuple[ResourceKind, Obj]]) -> int:
        ns_kind = self._buckets["/namespaces"].kind
        namespaces = self._buckets["/namespaces"].objects
        with self.lock:
            for kind, obj in batch:
                meta = obj["metadata"]
                namespace = ""
                if kind.namespaced:
                    namespace = meta.get("namespace") or "default"
                    meta["namespace"] = namespace
                    if namespace not in namespaces:
                        self._create_locked(ns_kind, "", {"metadata": {"name": namespace}}, dry_run=False,
                                            reset_status=False)
                name = meta.get("name") or ""
                bucket = self.bucket(kind)
                if name and object_key(namespace, name) in bucket.objects:
                    meta.pop("resourceVersion", None)
                    status = obj.get("status")
                    self._update_locked(kind, namespace, name, obj, subresource="", dry_run=False,
                                        validate=False)
                    if status is not None and bucket.kind.has_status:
                        self._update_locked(kind, namespace, name, {"metadata": {"name": name},
                                                                    "status": status},
                                            subresource="status", dry_run=False, validate=False)
                else:
                    self._create_locked(kind, namespace, obj, dry_run=False, reset_status=False,
                                        validate=False)
        return len(batch)
