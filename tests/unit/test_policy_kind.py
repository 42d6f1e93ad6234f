"""The Policy kind: handler filtering, the sync's events and status (deferred during start-up), the store's
resolution of references and Secrets, the users of a Secret, and the webhook's validator."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingressctl.controller.kinds import ResourceKind
from ingressctl.controller.replicas import ControllerReplicas
from ingressctl.controller.task import Task
from ingressctl.k8s.store import DeletedFinalStateUnknown
from ingressctl.keys import ResourceKey
from ingressctl.kinds.policy.kind import (
    POLICIES,
    POLICY_KIND,
    PolicyStatusWriter,
    PolicyStore,
    PolicySync,
    policy_handler,
    policy_kind_factory,
)
from ingressctl.kinds.virtualserver.policies import vs_policy_claims, vs_policy_references, vsr_policy_claims
from ingressctl.secret_types import SecretReference
from ingressctl.webhook.admission import registry_lookup


def pol(name: str, rv: str = "1", cls: str = "", **spec: Any) -> dict[str, Any]:
    if cls:
        spec["ingressClassName"] = cls
    return {"metadata": {"name": name, "namespace": "demo", "resourceVersion": rv}, "spec": spec}


def test_handler_enqueues_ours_on_spec_changes_and_every_delete() -> None:
    tasks: list[Task] = []
    h = policy_handler(tasks.append, "nginx")
    h.on_add(pol("a", accessControl={"allow": ["1.1.1.1"]}))
    h.on_add(pol("b", cls="other", accessControl={}))
    old = pol("a", "1", accessControl={"allow": ["1.1.1.1"]})
    h.on_update(old, {**old, "metadata": {**old["metadata"], "resourceVersion": "2"}, "status": {"x": 1}})
    h.on_update(old, pol("a", "3", accessControl={"allow": ["2.2.2.2"]}))
    h.on_update(pol("b", "1", cls="nginx"), pol("b", "2", cls="other"))   # leaves our class
    h.on_delete(DeletedFinalStateUnknown("demo/gone", None))
    assert tasks == [Task(POLICY_KIND, "demo/a"), Task(POLICY_KIND, "demo/a"), Task(POLICY_KIND, "demo/b"),
                     Task(POLICY_KIND, "demo/gone")]


@dataclass
class FakeReporter:
    events: list[tuple[str, str, str]] = field(default_factory=list)
    tracked: list[tuple[ResourceKey, bool]] = field(default_factory=list)
    untracked: list[ResourceKey] = field(default_factory=list)

    def event(self, obj: dict[str, Any], kind: str, event_type: str, reason: str, message: str) -> None:
        self.events.append((event_type, reason, message))

    def track_status(self, key: ResourceKey, *, defer: bool) -> None:
        self.tracked.append((key, defer))

    def untrack_status(self, key: ResourceKey) -> None:
        self.untracked.append(key)


class FakeConfiguration:
    def __init__(self, users: dict[tuple[str, str], list[Any]]) -> None:
        self.users = users

    def find_resources_for_policy(self, namespace: str, name: str) -> list[Any]:
        return self.users.get((namespace, name), [])


@dataclass
class Res:
    name: str

    @property
    def key_with_kind(self) -> ResourceKey:
        return ResourceKey("virtualserver", f"demo/{self.name}")


class FakeSecrets:
    def __init__(self, refs: dict[str, SecretReference]) -> None:
        self.refs = refs

    def get_secret_reference(self, key: str) -> SecretReference:
        missing = SecretReference(key, error="secret doesn't exist or of an unsupported type")
        return self.refs.get(key) or missing


class FakeInformers:
    def __init__(self, lbc: FakeLBC) -> None:
        self.lbc = lbc

    def list(self, kind: str) -> list[dict[str, Any]]:
        assert kind == POLICY_KIND
        return list(self.lbc.policies.values())


class FakeLBC:
    def __init__(self, *, ready: bool, users: dict[tuple[str, str], list[Any]] | None = None) -> None:
        self.policies: dict[str, dict[str, Any]] = {}
        self.ready = ready
        self.reporter = FakeReporter()
        self.configuration = FakeConfiguration(users or {})
        self.secret_store = FakeSecrets({})
        self.informers = FakeInformers(self)
        self.rerendered: list[tuple[list[Any], str]] = []
        self.options = type("O", (), {"ingress_class": "nginx"})()
        self.secret_users: list[Any] = []
        self.replicas = ControllerReplicas(lambda n: None)
        self.status = type("S", (), {"is_leader": staticmethod(lambda: True)})()

    def get_object(self, name: str, key: str) -> dict[str, Any] | None:
        assert name == POLICY_KIND
        return self.policies.get(key)

    def is_ready(self) -> bool:
        return self.ready

    def is_rendering(self) -> bool:
        return self.ready

    def rerender(self, resources: list[Any], reason: str) -> None:
        self.rerendered.append((resources, reason))


def test_sync_reports_valid_and_invalid_defers_status_at_start_up_and_re_renders_users() -> None:
    lbc = FakeLBC(ready=False, users={("demo", "p"): [Res("cafe")]})
    store = PolicyStore()
    store.bind(lbc, "nginx")
    sync = PolicySync(lbc, store)
    lbc.policies["demo/p"] = pol("p", accessControl={"allow": ["10.0.0.1"]})
    sync("demo/p")
    assert lbc.reporter.events == [("Normal", "AddedOrUpdated", "Policy demo/p was added or updated")]
    assert lbc.reporter.tracked == [(ResourceKey(POLICY_KIND, "demo/p"), True)]    # deferred to the flush
    assert lbc.rerendered == []                     # start-up: the first render reads every Policy
    lbc.ready = True
    lbc.policies["demo/p"] = pol("p", "2", accessControl={"allow": ["nope"]})
    sync("demo/p")
    assert lbc.reporter.events[-1] == (
        "Warning", "Rejected",
        'Policy demo/p is invalid and was rejected: spec.accessControl.allow[0]: Invalid value: "nope": '
        "must be a CIDR or IP")
    assert lbc.reporter.tracked[-1] == (ResourceKey(POLICY_KIND, "demo/p"), False)
    assert lbc.rerendered == [([Res("cafe")], "policy")]
    del lbc.policies["demo/p"]
    sync("demo/p")
    assert len(lbc.reporter.events) == 2            # a deleted Policy emits nothing
    assert lbc.reporter.untracked == [ResourceKey(POLICY_KIND, "demo/p")]
    assert len(lbc.rerendered) == 2                 # its users fail closed now


def test_store_resolves_class_validity_and_secrets_and_finds_secret_users() -> None:
    lbc = FakeLBC(ready=True, users={("demo", "auth"): [Res("a")], ("demo", "rl"): [Res("b")]})
    lbc.secret_store = FakeSecrets({"demo/users": SecretReference("demo/users", "/s/demo-users",
                                                                  secret_type="nginx.org/htpasswd")})
    store = PolicyStore()
    assert store.resolve("demo/auth").policy is None          # unbound: every reference is missing
    store.bind(lbc, "nginx")
    lbc.policies = {"demo/auth": pol("auth", basicAuth={"secret": "users"}),
                    "demo/rl": pol("rl", rateLimit={"rate": "1r/s", "key": "${uri}", "zoneSize": "1m",
                                                    "scale": True}),
                    "demo/bad": pol("bad", basicAuth={}),
                    "demo/theirs": pol("theirs", cls="other", accessControl={"allow": ["1.1.1.1"]})}
    r = store.resolve("demo/auth")
    assert r.policy is not None and not r.error
    secret = r.secrets["secret"]
    assert (secret.path, secret.secret_type) == ("/s/demo-users", "nginx.org/htpasswd")
    assert store.resolve("demo/bad").error == "spec.basicAuth.secret: Required value"
    assert store.resolve("demo/theirs").policy is None and store.resolve("demo/none").policy is None
    assert store.resources_for_secret("demo", "users") == [Res("a")]
    assert store.resources_for_secret("demo", "other") == []
    assert store.resources_for_replicas() == [Res("b")]
    resolved = store.resolve_for([("demo", [[{"name": "auth"}, {"name": "rl", "namespace": "demo"}], None])])
    assert sorted(resolved) == ["demo/auth", "demo/rl"]


def test_references_of_virtualservers_and_routes() -> None:
    vs = {"metadata": {"namespace": "a"}, "spec": {"policies": [{"name": "p"}], "routes": [
        {"path": "/", "policies": [{"name": "q", "namespace": "b"}, {"name": "p"}]}, {"path": "/x"}, "junk"]}}
    vsr = {"metadata": {"namespace": "c"}, "spec": {"subroutes": [{"policies": [{"name": "r"}, {}]}]}}
    assert vs_policy_claims(vs) == (("a", "p"), ("b", "q"))
    assert vsr_policy_claims(vsr) == (("c", "r"),)
    assert [ns for ns, _ in vs_policy_references(vs, [vsr])] == ["a", "c"]


def test_status_writer_has_no_external_endpoints() -> None:
    writes: list[dict[str, Any]] = []

    class Client:
        def get(self, rt: Any, namespace: str | None, name: str) -> dict[str, Any]:
            raise AssertionError

        def update_status(self, rt: Any, namespace: str | None, name: str,
                          body: dict[str, Any]) -> dict[str, Any]:
            writes.append(body["status"])
            return body

    obj = pol("p")
    w = PolicyStatusWriter(Client(), get_cached=lambda key: obj, is_leader=lambda: True, addresses=lambda: [],
                           rt=POLICIES)
    w.observe_event(obj, "Normal", "AddedOrUpdated", "Policy demo/p was added or updated")
    assert w.update_status("demo/p") is True
    assert writes == [{"state": "Valid", "reason": "AddedOrUpdated",
                       "message": "Policy demo/p was added or updated"}]
    obj["status"] = writes[0]
    assert w.update_status("demo/p") is False and w.writes == 1     # nothing changed: no write


def test_the_webhook_validates_policies_through_the_registry() -> None:
    lbc = FakeLBC(ready=True)
    kind: ResourceKind = policy_kind_factory(None, PolicyStore())(lbc)   # type: ignore[arg-type]
    assert lbc.secret_users and lbc.replicas.sources
    validate = registry_lookup([kind], lambda g, k: None)("k8s.nginx.org", "Policy")
    assert validate is not None
    verdict = validate(pol("p", basicAuth={"realm": "x"}), None, None)   # type: ignore[arg-type]
    assert verdict.message == ("Policy demo/p is invalid and was rejected: spec.basicAuth.secret: Required "
                               "value")
    assert validate(pol("p", basicAuth={"secret": "s"}), None, None).message == ""   # type: ignore[arg-type]
    assert validate(pol("p", cls="other", basicAuth={}), None, None).message == ""   # type: ignore[arg-type]
