"""Manager file handling without a running NGINX: atomic writes, change detection, names, paths."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from ingressctl.nginx.conf_dir import content_digest
from ingressctl.nginx.manager import Manager, NginxStartError, ReloadError
from ingressctl.nginx.paths import CONF_D_INCLUDE, CONFIG_VERSION_INCLUDE, config_version_include_path
from ingressctl.nginx.verify import render_config_version


@pytest.fixture
def mgr(tmp_path: Path) -> Manager:
    return Manager(binary="nginx", conf_dir=str(tmp_path / "conf"), run_dir=str(tmp_path / "run"),
                   reload_timeout_ms=5000)


@pytest.fixture
def stat_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths `os.stat` is called with from now on."""
    looked: list[str] = []
    real_stat = os.stat

    def spy_stat(path: str, *args: object, **kwargs: object) -> os.stat_result:
        looked.append(str(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", spy_stat)
    return looked


def mode_of(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_creates_directories_with_secrets_private(mgr: Manager) -> None:
    assert os.path.isdir(os.path.join(mgr.conf_dir, "conf.d"))
    assert os.path.isdir(mgr.run_dir)
    assert mgr.secrets_dir == os.path.join(mgr.conf_dir, "secrets")
    assert mode_of(mgr.secrets_dir) == 0o711


def test_create_config_reports_changes_and_keeps_mtime(mgr: Manager) -> None:
    assert mgr.create_config("default-cafe", "server { }\n") is True
    path = mgr.config_path("default-cafe")
    assert path == os.path.join(mgr.conf_dir, "conf.d", "default-cafe.conf")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # an old mtime, so any rewrite would show
    before = os.stat(path)
    assert mgr.create_config("default-cafe", "server { }\n") is False
    after = os.stat(path)
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)
    assert mgr.create_config("default-cafe", "server { listen 81; }\n") is True
    assert mgr.read_config("default-cafe") == "server { listen 81; }\n"
    assert mode_of(path) == 0o644


def test_change_detection_compares_with_disk_not_just_the_cache(mgr: Manager, tmp_path: Path) -> None:
    assert mgr.create_config("a", "one\n") is True
    Path(mgr.config_path("a")).write_text("edited behind our back\n")
    assert mgr.read_config("a") == "edited behind our back\n"
    assert mgr.create_config("a", "one\n") is True
    os.unlink(mgr.config_path("a"))
    assert mgr.read_config("a") is None
    assert mgr.create_config("a", "one\n") is True
    # A fresh Manager (empty cache) over the same files sees identical bytes as unchanged.
    other = Manager(binary="nginx", conf_dir=mgr.conf_dir, run_dir=mgr.run_dir)
    assert other.create_config("a", "one\n") is False
    assert other.create_main_config("main\n") is True
    assert mgr.create_main_config("main\n") is False


def test_a_file_found_in_place_is_compared_byte_for_byte_and_digested_once(
        mgr: Manager, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file another process wrote (no cache entry): same bytes are read once and kept, without digesting
    what was read; another size is rewritten without reading it."""
    from ingressctl.nginx import conf_dir as conf_dir_module

    Path(mgr.config_path("ahead")).write_text("server { }\n")
    Path(mgr.config_path("other")).write_text("server { listen 81; }\n")
    ino = os.stat(mgr.config_path("ahead")).st_ino
    digests: list[bytes] = []
    reads: list[str] = []
    real_digest, real_read = conf_dir_module.content_digest, Manager._read

    def spy_digest(data: bytes) -> bytes:
        digests.append(data)
        return real_digest(data)

    def spy_read(path: str) -> bytes | None:
        reads.append(path)
        return real_read(path)

    monkeypatch.setattr(conf_dir_module, "content_digest", spy_digest)
    monkeypatch.setattr(Manager, "_read", staticmethod(spy_read))
    assert mgr.create_config("ahead", "server { }\n") is False
    assert os.stat(mgr.config_path("ahead")).st_ino == ino
    assert digests == [b"server { }\n"] and reads == [mgr.config_path("ahead")]
    assert mgr.create_config("ahead", "server { }\n") is False  # now cached: no read
    assert reads == [mgr.config_path("ahead")]
    assert mgr.create_config("other", "server { }\n") is True   # another size: no read
    assert reads == [mgr.config_path("ahead")] and mgr.read_config("other") == "server { }\n"


def test_a_config_written_ahead_is_adopted_only_while_it_is_that_file(
        mgr: Manager, monkeypatch: pytest.MonkeyPatch) -> None:
    """`write_config_ahead` (in a forked process) returns what `adopt_config` needs: the file is then known
    without reading it; a file replaced or removed since is not adopted, and nothing is recorded for it."""
    reads: list[str] = []
    real_read = Manager._read

    def spy_read(path: str) -> bytes | None:
        reads.append(path)
        return real_read(path)

    monkeypatch.setattr(Manager, "_read", staticmethod(spy_read))
    kept = mgr.write_config_ahead("kept", "server { }\n")
    assert kept.digest == content_digest(b"server { }\n") and kept.size == len("server { }\n")
    assert mgr.adopt_config("kept", kept) is True
    assert mgr.create_config("kept", "server { }\n") is False and reads == []  # known: not read
    assert mgr.create_config("kept", "server { listen 81; }\n") is True
    assert mgr.read_config("kept") == "server { listen 81; }\n"
    # Replaced after it was written ahead (another inode, even with the same bytes): not adopted.
    replaced = mgr.write_config_ahead("replaced", "server { }\n")
    mgr.write_config_ahead("replaced", "server { }\n")
    assert mgr.adopt_config("replaced", replaced) is False
    reads.clear()
    assert mgr.create_config("replaced", "server { }\n") is False and reads == [mgr.config_path("replaced")]
    gone = mgr.write_config_ahead("gone", "server { }\n")
    mgr.delete_config("gone")
    assert mgr.adopt_config("gone", gone) is False
    assert mgr.create_config("gone", "server { }\n") is True


def test_a_config_known_absent_is_written_without_looking_at_the_old_one(
        mgr: Manager, stat_calls: list[str]) -> None:
    looked = stat_calls
    path = mgr.config_path("fresh")
    assert mgr.create_config("fresh", "server { }\n", absent=True) is True
    assert path not in looked
    assert mgr.read_config("fresh") == "server { }\n" and mode_of(path) == 0o644
    # The cache is filled as by any write: identical bytes later are no write.
    assert mgr.create_config("fresh", "server { }\n") is False
    assert path in looked
    # A caller that was wrong (the file exists) still gets an atomic replacement with its bytes.
    assert mgr.create_config("fresh", "server { listen 81; }\n", absent=True) is True
    assert mgr.read_config("fresh") == "server { listen 81; }\n"
    assert [e for e in os.listdir(os.path.dirname(path)) if e.startswith(".")] == []


def test_delete_and_list_configs(mgr: Manager) -> None:
    mgr.create_config("ns-b", "b")
    mgr.create_config("ns-a", "a")
    Path(mgr.conf_dir, "conf.d", ".ns-c.conf.x.tmp").write_text("temp")
    assert mgr.list_configs() == ["ns-a", "ns-b"]
    assert mgr.delete_config("ns-a") is True
    assert mgr.delete_config("ns-a") is False
    assert mgr.list_configs() == ["ns-b"]
    assert mgr.create_config("ns-a", "a") is True  # deleted files are not remembered as current


def test_writes_leave_no_temp_files(mgr: Manager) -> None:
    for i in range(5):
        mgr.create_config("x", f"content {i}\n")
        mgr.create_secret("s", f"secret {i}".encode())
    assert sorted(os.listdir(os.path.join(mgr.conf_dir, "conf.d"))) == ["x.conf"]
    assert sorted(os.listdir(mgr.secrets_dir)) == ["s"]


def test_write_is_a_rename_so_readers_never_see_partial_content(mgr: Manager) -> None:
    big_a, big_b = "a" * 1_000_000, "b" * 1_000_000
    mgr.create_config("big", big_a)
    stop = threading.Event()
    seen: set[str] = set()

    def reader() -> None:
        while not stop.is_set():
            with open(mgr.config_path("big")) as f:
                text = f.read()
            seen.add("ok" if text in (big_a, big_b) else f"partial {len(text)}")

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(20):
            mgr.create_config("big", big_a if i % 2 else big_b)
    finally:
        stop.set()
        t.join()
    assert seen == {"ok"}


def test_failed_write_leaves_old_file_and_no_temp(mgr: Manager, monkeypatch: pytest.MonkeyPatch) -> None:
    mgr.create_config("x", "old\n")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        mgr.create_config("x", "new\n")
    monkeypatch.undo()
    assert mgr.read_config("x") == "old\n"
    assert os.listdir(os.path.join(mgr.conf_dir, "conf.d")) == ["x.conf"]
    assert mgr.create_config("x", "new\n") is True


def test_secret_mode_and_atomic_replace(mgr: Manager) -> None:
    path = mgr.create_secret("default-tls", b"-----BEGIN CERTIFICATE-----\n")
    assert path == os.path.join(mgr.secrets_dir, "default-tls") == mgr.secret_path("default-tls")
    assert mode_of(path) == 0o600
    ino = os.stat(path).st_ino
    assert mgr.create_secret("default-tls", b"-----BEGIN CERTIFICATE-----\n") == path
    assert os.stat(path).st_ino == ino                      # unchanged bytes: not rewritten
    mgr.create_secret("default-tls", b"new")
    assert os.stat(path).st_ino != ino                      # changed: a new file renamed over the old one
    assert Path(path).read_bytes() == b"new"
    assert mode_of(path) == 0o600
    mgr.create_secret("default-tls", b"new", mode=0o640)    # same bytes, other mode: mode fixed
    assert mode_of(path) == 0o640
    mgr.create_secret("text", "as str")
    assert Path(mgr.secret_path("text")).read_text() == "as str"
    mgr.delete_secret("default-tls")
    assert not os.path.exists(path)
    mgr.delete_secret("default-tls")                        # missing: no error


def test_a_secret_file_the_dir_never_held_is_written_without_looking_for_it(
        tmp_path: Path, stat_calls: list[str]) -> None:
    """The secrets dir is listed once; a name it did not hold (and not written since) is known absent: no
    stat of a missing file. Names it held, or that were written since, are compared with the disk."""
    first = Manager(binary="nginx", conf_dir=str(tmp_path / "conf"), run_dir=str(tmp_path / "run"))
    first.create_secret("kept", b"old")
    mgr = Manager(binary="nginx", conf_dir=first.conf_dir, run_dir=first.run_dir)  # a restart: the file stays
    kept, ino = mgr.secret_path("kept"), os.stat(first.secret_path("kept")).st_ino
    looked = stat_calls
    looked.clear()
    assert mgr.create_secret("new", b"pem") and mgr.secret_path("new") not in looked
    mgr.create_secret("kept", b"old")                        # on disk already: compared, not rewritten
    assert kept in looked and os.stat(kept).st_ino == ino
    looked.clear()
    mgr.create_secret("new", b"pem")                         # written since: compared with the disk
    assert mgr.secret_path("new") in looked
    Path(mgr.secret_path("new")).write_bytes(b"edited behind our back")
    mgr.create_secret("new", b"pem")
    assert Path(mgr.secret_path("new")).read_bytes() == b"pem"
    mgr.delete_secret("new")
    looked.clear()
    mgr.create_secret("new", b"pem2")                        # deleted since: absent again
    assert mgr.secret_path("new") not in looked and Path(mgr.secret_path("new")).read_bytes() == b"pem2"
    # Created behind our back after the listing: still replaced atomically with our bytes.
    Path(mgr.secret_path("other")).write_bytes(b"theirs")
    mgr.create_secret("other", b"ours")
    other = mgr.secret_path("other")
    assert Path(other).read_bytes() == b"ours" and mode_of(other) == 0o600
    assert sorted(os.listdir(mgr.secrets_dir)) == ["kept", "new", "other"]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_secret_for_nginx_workers_belongs_to_their_user(mgr: Manager) -> None:
    import pwd

    nobody = pwd.getpwnam("nobody").pw_uid
    path = mgr.create_secret("default-tls", b"PEM", owner=nobody)
    assert os.stat(path).st_uid == nobody and mode_of(path) == 0o600
    mgr.create_secret("default-tls", b"PEM")                  # unchanged, no owner asked: left as it is
    assert os.stat(path).st_uid == nobody
    os.chown(path, 0, -1)
    mgr.create_secret("default-tls", b"PEM", owner=nobody)    # same bytes, other owner: owner fixed
    assert os.stat(path).st_uid == nobody
    mgr.create_secret("default-tls", b"PEM2", owner=nobody)   # rewritten: owned before any byte is in it
    assert os.stat(path).st_uid == nobody and Path(path).read_bytes() == b"PEM2"


def test_temp_file_is_never_more_open_than_the_final_mode(mgr: Manager,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    modes: list[int] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        modes.append(mode_of(src))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    mgr.create_secret("k", b"key")
    assert modes == [0o600]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o277])
def test_files_get_exactly_their_mode_whatever_the_umask(mgr: Manager, monkeypatch: pytest.MonkeyPatch,
                                                         umask: int) -> None:
    """Created with the final mode (so never more open), and widened only when the umask narrowed it: under
    the usual umask no chmod at all."""
    while_written: list[int] = []
    chmods: list[int] = []
    real_write, real_fchmod = os.write, os.fchmod

    def spy_write(fd: int, data: bytes) -> int:
        while_written.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_write(fd, data)

    def spy_fchmod(fd: int, mode: int) -> None:
        chmods.append(mode)
        real_fchmod(fd, mode)

    monkeypatch.setattr(os, "write", spy_write)
    monkeypatch.setattr(os, "fchmod", spy_fchmod)
    old = os.umask(umask)
    try:
        mgr.create_config("c", "server { }\n")
        mgr.create_secret("k", b"key")
        mgr.create_secret("h", b"htpasswd", mode=0o644)
    finally:
        os.umask(old)
    assert (mode_of(mgr.config_path("c")), mode_of(mgr.secret_path("k")), mode_of(mgr.secret_path("h"))) == (
        0o644, 0o600, 0o644)
    assert len(while_written) == 3
    assert all(m & ~final == 0 for m, final in zip(while_written, [0o644, 0o600, 0o644], strict=True))
    assert chmods == {0o022: [], 0o077: [0o644, 0o644], 0o277: [0o644, 0o600, 0o644]}[umask]
    # The cached stat is the file's: an unchanged rewrite is no write.
    assert mgr.create_config("c", "server { }\n") is False


@pytest.mark.parametrize("name", ["", "a/b", "..", ".hidden", "x\0y", "n" * 201])
def test_rejects_bad_names(mgr: Manager, name: str) -> None:
    with pytest.raises(ValueError, match="invalid"):
        mgr.create_config(name, "x")
    with pytest.raises(ValueError, match="invalid"):
        mgr.create_secret(name, b"x")


def test_rejects_paths_nginx_cannot_take(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="characters"):
        Manager(binary="nginx", conf_dir=str(tmp_path / "c"), run_dir=str(tmp_path / "has space"))
    with pytest.raises(ValueError, match="longer than 107"):
        Manager(binary="nginx", conf_dir=str(tmp_path / "c"), run_dir=str(tmp_path / ("r" * 100)))
    with pytest.raises(ValueError, match="positive"):
        Manager(binary="nginx", conf_dir=str(tmp_path / "c"), run_dir=str(tmp_path / "r"),
                reload_timeout_ms=0)


def test_a_secrets_dir_it_cannot_own_is_a_clear_error(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A volume mounted at conf/secrets belongs to root: the controller's user cannot narrow its mode."""
    secrets = tmp_path / "conf" / "secrets"
    real_chmod = os.chmod

    def chmod(path: str, mode: int) -> None:
        if str(path) == str(secrets):
            raise PermissionError(1, "Operation not permitted", str(path))
        real_chmod(path, mode)

    monkeypatch.setattr(os, "chmod", chmod)
    with pytest.raises(ValueError, match=r"cannot set the mode of .*secrets: Operation not permitted; the "
                                         r"controller must own it \(mount a volume at the conf dir"):
        Manager(binary="nginx", conf_dir=str(tmp_path / "conf"), run_dir=str(tmp_path / "run"))


def test_relative_dirs_become_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    m = Manager(binary="nginx", conf_dir="conf", run_dir="run")
    assert m.conf_dir == str(tmp_path / "conf") and m.run_dir == str(tmp_path / "run")
    assert m.paths.config_version_socket == str(tmp_path / "run" / "nginx-config-version.sock")


def test_config_version_file_content() -> None:
    text = render_config_version(7, "/run/x/nginx-config-version.sock")
    assert "listen unix:/run/x/nginx-config-version.sock;" in text
    assert "return 200 7;" in text
    assert '"7" "";' in text
    assert config_version_include_path() == CONFIG_VERSION_INCLUDE == "config-version.conf"
    assert CONF_D_INCLUDE == "conf.d/*.conf"


def test_runtime_directives(mgr: Manager) -> None:
    main = mgr.paths.main_directives()
    assert "daemon off;" in main and "error_log stderr notice;" in main
    assert f"pid {mgr.run_dir}/nginx.pid;" in main
    http = mgr.paths.http_directives()
    for d, sub in (("client_body_temp_path", "client_body"), ("proxy_temp_path", "proxy"),
                   ("fastcgi_temp_path", "fastcgi"), ("uwsgi_temp_path", "uwsgi"),
                   ("scgi_temp_path", "scgi")):
        assert f"{d} {mgr.run_dir}/{sub};" in http
    assert f"listen unix:{mgr.run_dir}/nginx-status.sock;" in http
    assert "include config-version.conf;" in http and "include conf.d/*.conf;" in http
    assert "stub_status" not in mgr.paths.http_directives(stub_status=False)


def test_start_and_reload_fail_clearly_without_nginx(mgr: Manager) -> None:
    with pytest.raises(NginxStartError, match="does not exist"):
        mgr.start()
    mgr.create_main_config("events {}\n")
    with pytest.raises(NginxStartError, match="daemon off"):
        mgr.start()
    calls: list[tuple[bool, int, bool]] = []
    mgr.on_reload = lambda ok, ms, ep: calls.append((ok, ms, ep))
    with pytest.raises(ReloadError, match="nginx reload failed: nginx is not running"):
        mgr.reload(is_endpoints_update=True)
    assert (mgr.reload_errors, mgr.reload_count, mgr.last_reload_ok, mgr.config_version) == (1, 0, False, 0)
    assert [(ok, ep) for ok, _, ep in calls] == [(False, True)]
    mgr.quit()  # nothing running: a no-op
    assert not mgr.is_running()


def test_missing_binary_is_a_clear_error(tmp_path: Path) -> None:
    m = Manager(binary="no-such-nginx-binary", conf_dir=str(tmp_path / "c"), run_dir=str(tmp_path / "r"))
    m.create_main_config("daemon off;\nevents {}\n")
    with pytest.raises(NginxStartError, match="no-such-nginx-binary"):
        m.start()
    ok, out = m.test_config()
    assert not ok and "no-such-nginx-binary" in out


def test_configs_named_in_nginx_output(mgr: Manager) -> None:
    d = os.path.join(mgr.conf_dir, "conf.d")
    out = (f'2024/01/01 00:00:00 [emerg] 7#7: unknown directive "x" in {d}/default-cafe.conf:3\n'
           f'nginx: [emerg] duplicate upstream "u" in {d}/ns-b.conf:1\n'
           f"nginx: configuration file {d}/default-cafe.conf test failed\n"
           f"[emerg] something in {mgr.conf_dir}/nginx.conf:9\n")
    assert mgr.configs_named_in(out) == ["default-cafe", "ns-b"]
    assert mgr.configs_named_in("no file here") == []
