"""HostCertificates: the per-host PEM copies NGINX's workers read at TLS handshakes."""

from __future__ import annotations

import os
import pwd
import stat
import tempfile
from collections.abc import Iterator

import pytest

from ingressctl.configs.host_certificates import DEFAULT_SERVER_NAME, HostCertificates, worker_uid
from ingressctl.keys import ResourceKey

A, B = ResourceKey("ingress", "ns/a"), ResourceKey("ingress", "ns/b")


@pytest.fixture
def tmp() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="hc-")
    yield d
    import shutil

    shutil.rmtree(d, ignore_errors=True)


def pem(tmp: str, name: str, content: bytes) -> str:
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(content)
    return path


def read(hc: HostCertificates, host: str) -> bytes:
    with open(hc.path(host), "rb") as f:
        return f.read()


def test_each_host_gets_a_private_copy_of_its_pem(tmp: str) -> None:
    hc = HostCertificates(os.path.join(tmp, "hosts"))
    one, two = pem(tmp, "one", b"ONE"), pem(tmp, "two", b"TWO")
    hc.set(A, {"a.example.com": one, "*.w.example.com": two})
    assert read(hc, "a.example.com") == b"ONE" and read(hc, "*.w.example.com") == b"TWO"
    mode = os.stat(hc.path("a.example.com")).st_mode
    assert stat.S_IMODE(mode) == 0o600 and not os.path.islink(hc.path("a.example.com"))
    assert stat.S_IMODE(os.stat(hc.directory).st_mode) == 0o711  # traversable, not listable
    assert hc.sources() == {"a.example.com": one, "*.w.example.com": two}


def test_a_changed_pem_is_copied_again_on_refresh_and_on_set(tmp: str) -> None:
    hc = HostCertificates(os.path.join(tmp, "hosts"))
    one = pem(tmp, "one", b"ONE")
    hc.set(A, {"a.example.com": one})
    pem(tmp, "one", b"ONE-v2")           # the Secret's update rewrote its file
    hc.refresh(one)
    assert read(hc, "a.example.com") == b"ONE-v2"
    pem(tmp, "one", b"ONE-v3")
    hc.set(A, {"a.example.com": one})     # a render after the update
    assert read(hc, "a.example.com") == b"ONE-v3"
    hc.refresh(os.path.join(tmp, "unrelated"))  # nothing copies it: nothing happens
    assert read(hc, "a.example.com") == b"ONE-v3"


def test_a_host_moving_between_owners_serves_the_claiming_owners_pem(tmp: str) -> None:
    hc = HostCertificates(os.path.join(tmp, "hosts"))
    one, two = pem(tmp, "one", b"ONE"), pem(tmp, "two", b"TWO")
    hc.set(A, {"h.example.com": one})
    hc.set(B, {"h.example.com": two})     # B takes the host before A lets go
    assert read(hc, "h.example.com") == b"TWO"
    hc.set(A, {})                          # A lets go: B's stays
    assert read(hc, "h.example.com") == b"TWO"
    hc.set(A, {"h.example.com": one})
    hc.remove(A)                           # A is deleted while B still claims it: B's again
    assert read(hc, "h.example.com") == b"TWO"
    hc.remove(B)                           # nobody claims it: the file stays (never read without a server)
    assert read(hc, "h.example.com") == b"TWO"


def test_the_default_servers_certificate_and_a_fresh_start(tmp: str) -> None:
    d = os.path.join(tmp, "hosts")
    hc = HostCertificates(d)
    hc.set_default(pem(tmp, "default", b"DEFAULT"))
    hc.set(A, {"a.example.com": pem(tmp, "one", b"ONE")})
    assert read(hc, DEFAULT_SERVER_NAME) == b"DEFAULT"
    hc.set_default("")
    assert not os.path.exists(hc.path(DEFAULT_SERVER_NAME))
    HostCertificates(d)                    # a new run starts empty
    assert os.listdir(d) == []


def test_a_missing_pem_or_an_unsafe_host_writes_nothing(tmp: str) -> None:
    hc = HostCertificates(os.path.join(tmp, "hosts"))
    hc.set(A, {"a.example.com": os.path.join(tmp, "missing")})
    assert not os.path.exists(hc.path("a.example.com"))
    with pytest.raises(ValueError):
        hc.set(B, {"../x": pem(tmp, "one", b"ONE")})


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker user differs from ours only under root")
def test_under_root_the_files_belong_to_the_worker_user_who_must_reach_them(tmp: str) -> None:
    nobody = pwd.getpwnam("nobody")
    os.chmod(tmp, 0o700)
    with pytest.raises(ValueError, match="cannot traverse"):
        worker_uid("", os.path.join(tmp, "hosts"))
    with pytest.raises(ValueError, match="does not exist"):
        worker_uid("no-such-user-here", os.path.join(tmp, "hosts"))
    os.chmod(tmp, 0o711)
    uid = worker_uid("", os.path.join(tmp, "hosts"))
    assert uid == nobody.pw_uid
    hc = HostCertificates(os.path.join(tmp, "hosts"), uid)
    hc.set(A, {"a.example.com": pem(tmp, "one", b"ONE")})
    assert os.stat(hc.path("a.example.com")).st_uid == nobody.pw_uid
