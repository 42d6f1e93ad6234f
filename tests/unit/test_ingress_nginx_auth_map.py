"""ingress-nginx's `auth-secret-type: auth-map`: the htpasswd file made from a map (sorted by user), the
injection attempts it refuses, the read-on-demand cache (one GET per resourceVersion), the store's change
detection for a Secret whose reduced data does not change, the 503 of a failed read, and the rendering."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.controller import auth_map_secrets
from ingressctl.controller.auth_map_secrets import (
    RETRY_SECONDS,
    AuthMapFiles,
    auth_map_file_name,
    htpasswd_from_map,
    requeue_secret,
)
from ingressctl.controller.opaque_secrets import OPAQUE
from ingressctl.controller.secrets import ERROR_SECRET_MISSING, LocalSecretStore
from ingressctl.controller.task import Kind, Task
from ingressctl.controller.transforms import secret_transform
from ingressctl.k8s.errors import ApiError
from ingressctl.kinds.ingress.config import generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.ingress_nginx import basic_auth as ba
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.secret_types import SecretReference, SecretValidationError

N = "nginx.ingress.kubernetes.io/"
SHA = "{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M="  # "test"
HIDDEN = "hidden-hash"


def b64(value: str | bytes) -> str:
    return base64.b64encode(value.encode() if isinstance(value, str) else value).decode()


def secret(rv: str = "1", name: str = "users", secret_type: str = OPAQUE, **users: str | bytes
           ) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": secret_type,
            "metadata": {"name": name, "namespace": "shop", "resourceVersion": rv, "uid": "u-" + name},
            "data": {k: b64(v) for k, v in users.items()}}


class DirManager:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.deleted: list[str] = []

    def create_secret(self, name: str, content: bytes, mode: int = 0o600) -> str:
        path = self.root / name
        path.write_bytes(content)
        path.chmod(mode)
        return str(path)

    def delete_secret(self, name: str) -> None:
        self.deleted.append(name)
        (self.root / name).unlink(missing_ok=True)


class Reader:
    """The API's GET of a Secret: the current full Secret, or an ApiError to raise; counts the calls."""

    def __init__(self, current: Mapping[str, Any] | Exception) -> None:
        self.current = current
        self.calls: list[tuple[str, str]] = []

    def __call__(self, namespace: str, name: str) -> Mapping[str, Any]:
        self.calls.append((namespace, name))
        if isinstance(self.current, Exception):
            raise self.current
        return self.current


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# ---------------------------------------------------------------------------------------- the htpasswd file

def test_the_file_has_one_line_per_key_sorted_by_user() -> None:
    # ingress-nginx walks a Go map (random order); sorted keeps the bytes stable across reads.
    s = secret(zoe=SHA, alice="$apr1$x$y", bob="$2y$05$abc:def", **{"carol.b-c_d": "plain"})
    assert htpasswd_from_map(s) == (b"alice:$apr1$x$y\nbob:$2y$05$abc:def\ncarol.b-c_d:plain\n"
                                    b"zoe:" + SHA.encode() + b"\n")
    # One trailing line ending (a YAML `|` block scalar leaves one) is dropped; an empty Secret: no user.
    assert htpasswd_from_map(secret(a=SHA + "\n", b=SHA + "\r\n")) == f"a:{SHA}\nb:{SHA}\n".encode()
    assert htpasswd_from_map(secret()) == b""
    assert htpasswd_from_map({"type": OPAQUE}) == b""


@pytest.mark.parametrize(("users", "message"), [
    ({"alice": SHA + "\nmallory:" + SHA}, "the value of the key alice holds a line break"),
    ({"alice": SHA + "\rmallory:" + SHA}, "the value of the key alice holds a line break"),
    ({"alice": SHA + "\n\n"}, "the value of the key alice holds a line break"),
    ({"alice": SHA + "\r\nmallory:x\n"}, "the value of the key alice holds a line break"),
    ({"alice": "x\0y"}, "the value of the key alice holds a line break or a NUL byte"),
    ({"alice": ""}, "the value of the key alice is empty"),
    ({"alice": "\n"}, "the value of the key alice is empty"),
    ({"alice\nmallory": HIDDEN}, "is not a valid user name"),
    ({"a:b": HIDDEN}, "'a:b' is not a valid user name"),
    ({"a b": HIDDEN}, "is not a valid user name"),
    ({"..": HIDDEN}, "is not a valid user name"),
    ({"": HIDDEN}, "is not a valid user name"),
    ({"x" * 254: HIDDEN}, "is not a valid user name"),
])
def test_injection_attempts_refuse_the_whole_secret(users: dict[str, str], message: str) -> None:
    s = secret(**{"ok": SHA, **users})
    with pytest.raises(SecretValidationError, match=message) as e:
        htpasswd_from_map(s)
    assert not any(v in str(e.value) for v in (SHA, HIDDEN, "mallory:x", "x\0y"))  # never a value
    assert htpasswd_from_map(secret(**{"x" * 253: SHA})) == b"x" * 253 + b":" + SHA.encode() + b"\n"


def test_data_that_is_not_base64_or_not_a_map_is_refused() -> None:
    with pytest.raises(SecretValidationError, match="the data field alice is not valid base64"):
        htpasswd_from_map({"data": {"alice": "!!!"}})
    with pytest.raises(SecretValidationError, match="not a map"):
        htpasswd_from_map({"data": ["alice"]})


# ------------------------------------------------------------------------------------------- the read cache

def test_one_get_per_resource_version(tmp_path: Path) -> None:
    reader = Reader(secret("7", alice=SHA))
    files = AuthMapFiles(DirManager(tmp_path), reader)
    path, error = files.reference("shop/users", "7")
    assert (error, path) == ("", str(tmp_path / "shop-users_auth-map"))
    assert Path(path).read_text() == f"alice:{SHA}\n" and Path(path).stat().st_mode & 0o777 == 0o644
    for _ in range(3):  # re-renders without a change: no GET
        assert files.reference("shop/users", "7") == (path, "")
    assert reader.calls == [("shop", "users")]
    assert not files.outdated("shop/users", "7") and files.outdated("shop/users", "8")
    assert not files.outdated("shop/other", "1")   # never read: not ours to re-render
    reader.current = secret("8", alice=SHA, bob=SHA)
    assert files.reference("shop/users", "8") == (path, "")
    assert len(reader.calls) == 2 and Path(path).read_text() == f"alice:{SHA}\nbob:{SHA}\n"


def test_a_read_newer_than_the_informer_serves_that_version_too(tmp_path: Path) -> None:
    reader = Reader(secret("9", alice=SHA))
    files = AuthMapFiles(DirManager(tmp_path), reader)
    path, _ = files.reference("shop/users", "8")    # the GET already sees version 9
    assert not files.outdated("shop/users", "9")   # the informer's update to 9 then needs no read
    assert files.reference("shop/users", "9") == (path, "") and len(reader.calls) == 1


@pytest.mark.parametrize(("failure", "reason", "transient"), [
    (ApiError(403, "Forbidden", 'secrets "users" is forbidden'), "secret shop/users could not be read: 403",
     True),
    (ApiError(0, "Timeout", "GET /api/v1/namespaces/shop/secrets/users"),
     "secret shop/users could not be read: Timeout", True),
    (RuntimeError("boom"), "secret shop/users could not be read: boom", True),
    (ApiError(404, "NotFound", 'secrets "users" not found'), "secret shop/users does not exist", False),
])
def test_a_failed_read_is_an_error_and_removes_the_file(tmp_path: Path, failure: Exception, reason: str,
                                                        transient: bool) -> None:
    manager, clock = DirManager(tmp_path), Clock()
    reader = Reader(secret("1", alice=SHA))
    files = AuthMapFiles(manager, reader, clock=clock)
    retries: list[str] = []
    files.retry = retries.append
    path, _ = files.reference("shop/users", "1")
    reader.current = failure
    path2, error = files.reference("shop/users", "2")
    assert path2 == "" and error.startswith(reason)   # fail closed: no file left behind
    assert not Path(path).exists() and manager.deleted == ["shop-users_auth-map"]
    assert retries == (["shop/users"] if transient else [])   # the controller queues the Secret's sync
    clock.now += RETRY_SECONDS - 1
    assert files.reference("shop/users", "2") == ("", error) and len(reader.calls) == 2  # not yet again
    assert not files.outdated("shop/users", "2")
    reader.current = secret("2", alice=SHA)
    clock.now += 1
    if not transient:   # NotFound: the delete event follows; only a new version is read again
        assert not files.outdated("shop/users", "2")
        assert files.reference("shop/users", "2") == ("", error) and len(reader.calls) == 2
        assert files.outdated("shop/users", "3")
        return
    assert files.outdated("shop/users", "2")   # the queued sync re-renders its users, which read it again
    assert files.reference("shop/users", "2") == (path, "") and len(reader.calls) == 3
    assert Path(path).read_text() == f"alice:{SHA}\n"
    assert not files.outdated("shop/users", "2") and retries == ["shop/users"]


def test_the_retry_queues_the_secrets_sync() -> None:
    class Queue:
        def __init__(self) -> None:
            self.added: list[tuple[Task, float]] = []

        def add_after(self, item: Task, delay: float) -> None:
            self.added.append((item, delay))

    queue = Queue()
    requeue_secret(queue)("shop/users")
    assert queue.added == [(Task(Kind.SECRET, "shop/users"), RETRY_SECONDS)]


def test_a_retry_due_makes_the_stores_sync_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(auth_map_secrets, "time", SimpleNamespace(monotonic=clock))  # this module's only
    reader = Reader(ApiError(503, "ServiceUnavailable", "etcd"))
    store = LocalSecretStore(DirManager(tmp_path), ingress_nginx_compat=True, read_secret=reader)
    retries: list[str] = []
    store.retry_auth_maps(retries.append)
    store.add_or_update_secret(reduced(secret("1", alice=SHA)))
    assert "could not be read: 503" in store.get_auth_map_reference("shop/users").error
    assert retries == ["shop/users"]
    # The queued sync (same version) is a change once due: `sync_secret` re-renders the Ingresses using it.
    assert store.add_or_update_secret(reduced(secret("1", alice=SHA))) is False   # not due yet
    clock.now += RETRY_SECONDS
    reader.current = secret("1", alice=SHA)
    assert store.add_or_update_secret(reduced(secret("1", alice=SHA))) is True
    assert store.get_auth_map_reference("shop/users").error == ""
    assert store.add_or_update_secret(reduced(secret("1", alice=SHA))) is False
    assert len(reader.calls) == 2


def test_a_read_secret_of_another_type_or_invalid_is_an_error(tmp_path: Path) -> None:
    reader = Reader(secret("1", secret_type="kubernetes.io/tls", alice=SHA))
    files = AuthMapFiles(DirManager(tmp_path), reader)
    assert files.reference("shop/users", "1") == (
        "", "secret shop/users is of the type 'kubernetes.io/tls', must be 'Opaque'")
    reader.current = secret("2", alice=SHA + "\nmallory:" + SHA)
    assert files.reference("shop/users", "2") == (
        "", "secret shop/users is not a valid auth-map: the value of the key alice holds a line break or a "
            "NUL byte")
    assert list(tmp_path.iterdir()) == []


def test_forget_removes_the_file_and_the_entry(tmp_path: Path) -> None:
    reader = Reader(secret("1", alice=SHA))
    files = AuthMapFiles(DirManager(tmp_path), reader)
    path, _ = files.reference("shop/users", "1")
    files.forget("shop/users")
    assert not Path(path).exists() and "shop/users" not in files
    files.forget("shop/users")  # twice: nothing
    assert files.reference("shop/users", "1") == (path, "") and len(reader.calls) == 2
    assert auth_map_file_name("a-b/c") == "a-b-c_auth-map"


# ------------------------------------------------------------------------------------------------ the store

def reduced(s: dict[str, Any]) -> dict[str, Any]:
    """The Secret as the informer caches it with --ingress-nginx-compat (users dropped)."""
    return secret_transform(opaque=True)(s)


def test_the_store_reads_an_auth_map_secret_once_per_version(tmp_path: Path) -> None:
    reader = Reader(secret("1", alice=SHA))
    store = LocalSecretStore(DirManager(tmp_path), ingress_nginx_compat=True, read_secret=reader)
    assert store.add_or_update_secret(reduced(secret("1", alice=SHA)))
    assert "data" not in reduced(secret("1", alice=SHA))   # the cache never holds the users
    ref = store.get_auth_map_reference("shop/users")
    assert ref == SecretReference("shop/users", str(tmp_path / "shop-users_auth-map"), secret_type=OPAQUE)
    assert store.get_auth_map_reference("shop/users") == ref and len(reader.calls) == 1
    # A relist of the same version: no change. A new version with the same reduced data: a change (re-render).
    assert store.add_or_update_secret(reduced(secret("1", alice=SHA))) is False
    reader.current = secret("2", alice=SHA, bob=SHA)
    assert store.add_or_update_secret(reduced(secret("2", alice=SHA, bob=SHA))) is True
    assert store.get_auth_map_reference("shop/users") == ref and len(reader.calls) == 2
    assert Path(ref.path).read_text() == f"alice:{SHA}\nbob:{SHA}\n"
    # Another Opaque Secret nobody reads as a map: its updates stay no-ops, and nothing is read.
    store.add_or_update_secret(reduced(secret("1", name="app", password="x")))
    assert store.add_or_update_secret(reduced(secret("5", name="app", password="y"))) is False
    assert len(reader.calls) == 2
    # Deleted: the file goes, the reference is missing.
    assert store.delete_secret("shop/users")
    assert not Path(ref.path).exists()
    assert store.get_auth_map_reference("shop/users").error == ERROR_SECRET_MISSING


def test_the_store_keeps_the_auth_file_and_the_map_apart(tmp_path: Path) -> None:
    reader = Reader(secret("1", auth=f"carol:{SHA}\n"))
    store = LocalSecretStore(DirManager(tmp_path), ingress_nginx_compat=True, read_secret=reader)
    store.add_or_update_secret(reduced(secret("1", auth=f"carol:{SHA}\n")))
    plain, mapped = store.get_secret_reference("shop/users"), store.get_auth_map_reference("shop/users")
    assert Path(plain.path).name == "shop-users" and Path(mapped.path).name == "shop-users_auth-map"
    # auth-map: the key `auth` is a user like any other (its value's one trailing newline dropped).
    assert Path(mapped.path).read_text() == f"auth:carol:{SHA}\n"
    assert Path(plain.path).read_text() == f"carol:{SHA}\n"
    # A Secret that turns into another type: the map is forgotten, its reference is the plain one.
    reader.current = secret("1", alice=SHA)
    store.add_or_update_secret(reduced(secret("3", alice=SHA)))
    mapped = store.get_auth_map_reference("shop/users")
    assert Path(mapped.path).exists()
    store.add_or_update_secret(secret("4", secret_type="nginx.org/htpasswd", htpasswd=f"a:{SHA}\n"))
    assert not Path(mapped.path).exists()
    assert store.get_auth_map_reference("shop/users").secret_type == "nginx.org/htpasswd"


def test_a_store_without_a_reader_refuses_auth_maps(tmp_path: Path) -> None:
    store = LocalSecretStore(DirManager(tmp_path), ingress_nginx_compat=True)
    store.add_or_update_secret(reduced(secret("1", alice=SHA)))
    assert store.get_auth_map_reference("shop/users").error == "auth-map secrets cannot be read"


# ---------------------------------------------------------------------------------- translation and render

STATIC = StaticConfigParams(run_dir="/run/ic", conf_dir="/etc/ic", ingress_nginx_compat=True)


def render(annotations: dict[str, str], ref: SecretReference) -> tuple[str, list[str]]:
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "app", "namespace": "shop", "annotations": annotations},
           "spec": {"rules": [{"host": "app.example.com", "http": {"paths": [
               {"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}
    ex = IngressEx(ing, {"app.example.com": True}, {backend_key("web", 80): ["10.0.0.1:8080"]},
                   secret_refs={"users": ref})
    cfg, warnings = generate_nginx_config(ex, STATIC, ConfigParams())
    return TemplateExecutor().execute_ingress_template(cfg), warnings


MAP = {N + "auth-type": "basic", N + "auth-secret": "users", N + "auth-secret-type": "auth-map"}


def test_auth_map_translates_and_names_its_secret() -> None:
    t = translate(MAP)
    assert t.extras[ba.EXTRA] == ba.BasicAuthSpec("users", "", auth_map=True) and not t.errors
    assert translate({**MAP, N + "auth-secret-type": " auth-map "}).extras[ba.EXTRA].auth_map
    assert not translate({**MAP, N + "auth-secret-type": "auth-file"}).extras[ba.EXTRA].auth_map
    assert ba.auth_map_secret(MAP, "shop") == "users"
    assert ba.auth_map_secret({**MAP, N + "auth-secret": "shop/users"}, "shop") == "users"
    for other in ({**MAP, N + "auth-secret-type": "auth-file"}, {**MAP, N + "auth-secret": "other/users"},
                  {**MAP, N + "auth-type": "digest"}, {k: v for k, v in MAP.items() if k != N + "auth-type"}):
        assert ba.auth_map_secret(other, "shop") == ""


def test_auth_map_renders_on_its_file_and_a_failed_read_denies() -> None:
    ok = SecretReference("shop/users", "/etc/ic/secrets/shop-users_auth-map", secret_type=OPAQUE)
    text, warnings = render(MAP, ok)
    assert "auth_basic_user_file /etc/ic/secrets/shop-users_auth-map;" in text
    assert "return 503;" not in text and warnings == []
    failed = SecretReference("shop/users", error="secret shop/users could not be read: 403 Forbidden: no",
                             secret_type=OPAQUE)
    text, warnings = render(MAP, failed)
    assert "auth_basic" not in text and text.count("return 503;") == 1
    assert warnings == [ba.DENIED_MESSAGE.format(reason="secret shop/users could not be read: 403 Forbidden: "
                                                        "no")]
