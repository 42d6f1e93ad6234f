"""LocalSecretStore.write_files_ahead: TLS Secret files written by a forked process, taken over at the end.

A real Manager over a temporary directory writes the files, here and in the forked process."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ingressctl.controller.secrets import LocalSecretStore, tls_file_content
from ingressctl.nginx.manager import Manager
from tests.unit.test_secrets import key_pem, make_cert, make_key, tls_secret


class CountingManager(Manager):
    """A Manager that records the Secret files this process writes itself."""

    def __init__(self, root: Path) -> None:
        super().__init__(binary="nginx", conf_dir=str(root / "conf"), run_dir=str(root / "run"))
        self.written_here: list[str] = []

    def create_secret(self, name: str, content: bytes | str, mode: int = 0o600,
                      owner: int | None = None) -> str:
        self.written_here.append(name)
        return super().create_secret(name, content, mode, owner)


@pytest.fixture(scope="module")
def pairs() -> list[tuple[bytes, bytes]]:
    out = []
    for i in range(3):
        key = make_key("ec")
        out.append((make_cert(key, f"h{i}.example.com"), key_pem(key)))
    return out


@pytest.fixture
def manager(tmp_path: Path) -> CountingManager:
    return CountingManager(tmp_path)


def store_with(manager: Manager, secrets: Iterable[dict[str, Any]]) -> LocalSecretStore:
    store = LocalSecretStore(manager)
    for s in secrets:
        store.add_or_update_secret(s)
    return store


def secrets_on_disk(manager: Manager) -> set[str]:
    return {n for n in os.listdir(manager.secrets_dir) if not n.startswith(".")}


def test_files_written_ahead_are_taken_over_without_writing_them_here(
        manager: CountingManager, pairs: list[tuple[bytes, bytes]]) -> None:
    secrets = [tls_secret(*p, name=f"s{i}") for i, p in enumerate(pairs)]
    store = store_with(manager, secrets)
    assert store.write_files_ahead(lambda: ["default/s0", "default/s1", "default/s1", "default/missing"])
    refs = [store.get_secret_reference(f"default/s{i}") for i in (0, 1)]
    assert all(r.path and not r.error for r in refs)
    store.finish_files_ahead()
    assert manager.written_here == []
    assert secrets_on_disk(manager) == {"default-s0", "default-s1"}
    for ref, secret in zip(refs, secrets, strict=False):
        with open(ref.path, "rb") as f:
            assert f.read() == tls_file_content(secret)
        assert stat.S_IMODE(os.stat(ref.path).st_mode) == 0o600
    # Taken over with the digest of its bytes: an unchanged update writes nothing, a changed one rewrites.
    assert not store.add_or_update_secret(dict(secrets[0], metadata={**secrets[0]["metadata"],
                                                                     "resourceVersion": "2"}))
    changed = tls_secret(*pairs[2], name="s0")
    assert store.add_or_update_secret(changed)
    assert manager.written_here == ["default-s0"]
    with open(refs[0].path, "rb") as f:
        assert f.read() == tls_file_content(changed)


def test_a_reference_the_child_did_not_write_is_written_when_finished(
        manager: CountingManager, pairs: list[tuple[bytes, bytes]]) -> None:
    store = store_with(manager, [tls_secret(*pairs[0], name="s0")])
    assert store.write_files_ahead(lambda: [])
    ref = store.get_secret_reference("default/s0")
    assert ref.path and not ref.error
    store.finish_files_ahead()
    assert manager.written_here == ["default-s0"]
    assert os.path.exists(ref.path)


def test_files_written_ahead_that_nothing_referenced_are_removed(
        manager: CountingManager, pairs: list[tuple[bytes, bytes]]) -> None:
    store = store_with(manager, [tls_secret(*p, name=f"s{i}") for i, p in enumerate(pairs)])
    assert store.write_files_ahead(lambda: ["default/s0", "default/s1", "default/s2"])
    store.get_secret_reference("default/s1")
    store.finish_files_ahead()
    assert secrets_on_disk(manager) == {"default-s1"}
    assert manager.written_here == []


def late(keys: list[str]) -> Callable[[], list[str]]:
    """Keys for a forked process that writes their files only after this one went on (a slow machine)."""
    def keys_later() -> list[str]:
        time.sleep(0.3)
        return keys
    return keys_later


def test_a_secret_changed_after_the_fork_is_written_here_with_its_new_bytes(
        manager: CountingManager, pairs: list[tuple[bytes, bytes]]) -> None:
    """The forked process writes the old bytes; its write never lands after this process's."""
    store = store_with(manager, [tls_secret(*pairs[0], name="s0")])
    assert store.write_files_ahead(late(["default/s0"]))
    changed = tls_secret(*pairs[1], name="s0")
    store.add_or_update_secret(changed)
    ref = store.get_secret_reference("default/s0")
    assert manager.written_here == ["default-s0"]   # not handed out ahead: the child's copy is the old one
    store.finish_files_ahead()
    with open(ref.path, "rb") as f:
        assert f.read() == tls_file_content(changed)


def test_a_secret_deleted_after_it_was_handed_out_leaves_no_file(
        manager: CountingManager, pairs: list[tuple[bytes, bytes]]) -> None:
    store = store_with(manager, [tls_secret(*pairs[0], name="s0")])
    assert store.write_files_ahead(late(["default/s0"]))
    store.get_secret_reference("default/s0")
    store.delete_secret("default/s0")
    store.finish_files_ahead()
    assert secrets_on_disk(manager) == set()


def test_a_failed_child_costs_only_the_parallelism(
        manager: CountingManager, pairs: list[tuple[bytes, bytes]]) -> None:
    store = store_with(manager, [tls_secret(*p, name=f"s{i}") for i, p in enumerate(pairs)])

    def broken() -> Iterator[str]:
        yield "default/s0"
        raise RuntimeError("a bug in the forked process")

    assert store.write_files_ahead(broken)
    refs = [store.get_secret_reference(f"default/s{i}") for i in range(3)]
    store.finish_files_ahead()
    assert sorted(manager.written_here) == ["default-s0", "default-s1", "default-s2"]
    for ref in refs:
        assert os.path.exists(ref.path)


def test_invalid_and_unknown_secrets_are_never_handed_out_ahead(
        manager: CountingManager, pairs: list[tuple[bytes, bytes]]) -> None:
    bad = tls_secret(pairs[0][0], pairs[1][1], name="bad")  # the key does not match the certificate
    store = store_with(manager, [bad])
    assert store.write_files_ahead(lambda: ["default/bad", "default/none"])
    assert store.get_secret_reference("default/bad").error
    assert store.get_secret_reference("default/none").error
    store.finish_files_ahead()
    assert secrets_on_disk(manager) == set()


def test_after_finishing_references_write_as_before(
        manager: CountingManager, pairs: list[tuple[bytes, bytes]]) -> None:
    store = store_with(manager, [tls_secret(*pairs[0], name="s0")])
    assert store.write_files_ahead(lambda: [])
    store.finish_files_ahead()
    store.finish_files_ahead()  # a no-op
    ref = store.get_secret_reference("default/s0")
    assert manager.written_here == ["default-s0"] and os.path.exists(ref.path)


def test_a_manager_that_cannot_write_ahead_is_not_asked_to(pairs: list[tuple[bytes, bytes]],
                                                           tmp_path: Path) -> None:
    from tests.unit.test_secrets import DirManager
    store = store_with(DirManager(tmp_path), [tls_secret(*pairs[0], name="s0")])
    assert not store.write_files_ahead(lambda: ["default/s0"])
    assert os.path.exists(store.get_secret_reference("default/s0").path)


def test_a_stop_before_the_finish_kills_and_reaps_the_writer(
        manager: CountingManager, pairs: list[tuple[bytes, bytes]]) -> None:
    store = store_with(manager, [tls_secret(*pairs[0], name="s0")])

    def never_done() -> list[str]:   # runs in the forked process
        time.sleep(3600)
        return ["default/s0"]

    assert store.write_files_ahead(never_done)
    ahead = store._ahead
    assert ahead is not None
    pid = ahead.call.pid
    try:
        os.kill(pid, 0)   # running
        store.abandon_files_ahead()
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)   # killed and reaped: no child of that pid is left
        store.abandon_files_ahead()   # a no-op now
        store.finish_files_ahead()    # as is finishing
        assert secrets_on_disk(manager) == set()
    finally:
        ahead.call.close()   # whatever failed above, no sleeping child outlives the test
