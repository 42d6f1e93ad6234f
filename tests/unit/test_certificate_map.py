"""CertificateMap: server name -> PEM file of the certificates NGINX loads at TLS handshakes."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile

import pytest

from ingressctl.configs.certificate_map import CertificateMap, worker_uid
from ingressctl.keys import ResourceKey

A, B = ResourceKey("ingress", "ns/a"), ResourceKey("ingress", "ns/b")


def test_owners_map_their_hosts_and_the_text_changes_only_with_them() -> None:
    m = CertificateMap()
    m.text()
    m.set(A, {"A.example.com": "/s/ns-a", "*.w.example.com": "/s/ns-w"})
    assert m.changed and m.entries() == {"a.example.com": "/s/ns-a", "*.w.example.com": "/s/ns-w"}
    text = m.text()
    assert not m.changed
    assert 'map $server_name $ingressctl_certificate {\n    default "";\n' in text
    assert '    "\\\\a.example.com" "/s/ns-a";\n' in text and '    "\\\\*.w.example.com" "/s/ns-w";\n' in text
    m.set(A, {"a.example.com": "/s/ns-a", "*.w.example.com": "/s/ns-w"})  # the same again
    assert not m.changed
    m.default = "/s/default"
    assert m.changed and 'default "/s/default";' in m.text()


def test_a_host_moving_between_owners_maps_to_the_claiming_owners_pem() -> None:
    m = CertificateMap()
    m.set(A, {"h.example.com": "/s/one"})
    m.set(B, {"h.example.com": "/s/two"})      # B takes the host before A lets go
    assert m.entries() == {"h.example.com": "/s/two"}
    m.set(A, {})                                # A lets go: B's stays
    assert m.entries() == {"h.example.com": "/s/two"}
    m.set(A, {"h.example.com": "/s/one"})       # A claims it again (latest wins) ...
    assert m.entries() == {"h.example.com": "/s/one"}
    m.remove(A)                                 # ... and is deleted: B's again
    assert m.entries() == {"h.example.com": "/s/two"}
    m.text()
    m.remove(B)
    assert m.entries() == {} and m.changed


@pytest.mark.skipif(shutil.which("nginx") is None, reason="needs nginx")
def test_nginx_accepts_the_map_whatever_the_host_names() -> None:
    m = CertificateMap("/s/default")
    m.set(A, {h: f"/s/{i}" for i, h in enumerate(("default", "include", "hostnames", "volatile", "~x",
                                                     "*.example.com", "a.example.com"))})
    d = tempfile.mkdtemp(prefix="cm-")
    try:
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(f"error_log stderr;\npid {d}/nginx.pid;\nevents {{}}\nhttp {{\n{m.text()}}}\n")
        r = subprocess.run(["nginx", "-t", "-p", d + "/", "-c", os.path.join(d, "nginx.conf")],
                           capture_output=True, text=True, check=False)
        assert r.returncode == 0, r.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker user differs from ours only under root")
def test_under_root_the_worker_user_must_exist_and_reach_the_directory() -> None:
    d = tempfile.mkdtemp(prefix="cm-")
    try:
        os.chmod(d, 0o700)
        os.mkdir(os.path.join(d, "secrets"), 0o711)
        with pytest.raises(ValueError, match="cannot traverse"):
            worker_uid("", os.path.join(d, "secrets"))
        with pytest.raises(ValueError, match="does not exist"):
            worker_uid("no-such-user-here", d)
        os.chmod(d, 0o711)
        assert worker_uid("", d) == pwd.getpwnam("nobody").pw_uid
    finally:
        shutil.rmtree(d, ignore_errors=True)
