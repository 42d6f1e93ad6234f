"""Property: random create/update/delete sequences from several threads leave the devcluster consistent.

Each thread owns its object names and runs its operations sequentially through the official client, so each
thread's model is exact while the threads contend for the server. Afterwards:
- the list equals the union of the models (content and resourceVersions);
- a watch from the resourceVersion R before the run replays exactly the committed writes, in commit order,
  with contiguous resourceVersions R+1..end (no-op updates and conflicts commit nothing), and a watch from any
  later resourceVersion replays exactly the suffix after it.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from ingressctl.devcluster import DevCluster

pytestmark = pytest.mark.integration

THREADS = 3
NAMES_PER_THREAD = 3

_namespaces = itertools.count(1)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevCluster, list[client.CoreV1Api]]]:
    with DevCluster(bookmark_interval=0.05) as dc:
        path = dc.write_kubeconfig(str(Path(tmp_path_factory.mktemp("kc")) / "kubeconfig"))
        # One ApiClient per thread, as a controller would give each worker.
        yield dc, [client.CoreV1Api(config.new_client_from_config(path)) for _ in range(THREADS)]


op = st.tuples(st.sampled_from(["create", "update", "update_stale", "noop", "delete"]),
               st.integers(0, NAMES_PER_THREAD - 1), st.integers(0, 3))


@dataclass
class Committed:
    """A write the server accepted and that must appear as exactly one watch event."""

    type: str
    name: str
    rv: int | None            # None for deletes (ConfigMap deletes answer with a Status)
    data: dict[str, str] | None


@dataclass
class ThreadLog:
    model: dict[str, tuple[dict[str, str], str]] = field(default_factory=dict)   # name -> (data, rv)
    history: dict[str, list[Committed]] = field(default_factory=dict)   # name -> its writes, in order
    stale: dict[str, str] = field(default_factory=dict)                          # name -> an older rv
    error: str = ""


def run_thread(api: client.CoreV1Api, ns: str, tid: int, ops: list[tuple[str, int, int]], log: ThreadLog,
               start: threading.Barrier) -> None:
    start.wait()
    try:
        for kind, idx, value in ops:
            name = f"t{tid}-n{idx}"
            current = log.model.get(name)
            hist = log.history.setdefault(name, [])
            data = {"v": str(value), "by": str(tid)}
            if kind == "create":
                try:
                    cm = api.create_namespaced_config_map(ns, {"metadata": {"name": name}, "data": data})
                except ApiException as e:
                    assert current is not None and e.status == 409, (kind, name, e.status)
                    continue
                assert current is None
                log.model[name] = (data, cm.metadata.resource_version)
                hist.append(Committed("ADDED", name, int(cm.metadata.resource_version), data))
            elif current is None:
                try:
                    if kind == "delete":
                        api.delete_namespaced_config_map(name, ns)
                    else:
                        api.replace_namespaced_config_map(name, ns, {"metadata": {"name": name},
                                                                     "data": data})
                    raise AssertionError(f"{kind} of missing {name} succeeded")
                except ApiException as e:
                    assert e.status == 404, (kind, name, e.status)
            elif kind == "delete":
                api.delete_namespaced_config_map(name, ns)
                del log.model[name]
                log.stale.pop(name, None)
                hist.append(Committed("DELETED", name, None, current[0]))
            elif kind == "update_stale" and name in log.stale:
                try:
                    api.replace_namespaced_config_map(name, ns, {"metadata": {
                        "name": name, "resourceVersion": log.stale[name]}, "data": data})
                    raise AssertionError("an update with a stale resourceVersion succeeded")
                except ApiException as e:
                    assert e.status == 409, e.status
            else:
                body = {"metadata": {"name": name, "resourceVersion": current[1]},
                        "data": current[0] if kind == "noop" else data}
                cm = api.replace_namespaced_config_map(name, ns, body)
                rv = cm.metadata.resource_version
                if body["data"] == current[0]:
                    assert rv == current[1], "a no-op update must not commit"
                    continue
                log.stale[name] = current[1]
                log.model[name] = (body["data"], rv)
                hist.append(Committed("MODIFIED", name, int(rv), body["data"]))
    except Exception as e:   # reported by the test body
        log.error = f"thread {tid}: {e!r}"


def replay(api: client.CoreV1Api, ns: str, rv: str, until: int) -> list[dict[str, Any]]:
    """Watch events after `rv`, read until a bookmark proves that everything up to `until` was delivered."""
    resp = api.list_namespaced_config_map(ns, watch=True, resource_version=rv, allow_watch_bookmarks=True,
                                          timeout_seconds=60, _preload_content=False)
    events: list[dict[str, Any]] = []
    buf = b""
    try:
        for chunk in resp.stream(65536, decode_content=False):
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in (json.loads(x) for x in lines if x.strip()):
                if line["type"] != "BOOKMARK":
                    events.append(line)
                elif int(line["object"]["metadata"]["resourceVersion"]) >= until:
                    return events
        raise AssertionError("the watch ended without a bookmark")
    finally:
        resp.close()
        resp.release_conn()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(st.lists(st.lists(op, max_size=14), min_size=THREADS, max_size=THREADS), st.integers(0, 1000))
def test_concurrent_writes_list_and_replay(env: tuple[DevCluster, list[client.CoreV1Api]],
                                           programs: list[list[tuple[str, int, int]]], cut: int) -> None:
    _, apis = env
    ns = f"h{next(_namespaces)}"
    apis[0].create_namespace({"metadata": {"name": ns}})
    start_rv = apis[0].list_namespaced_config_map(ns).metadata.resource_version
    logs = [ThreadLog() for _ in range(THREADS)]
    barrier = threading.Barrier(THREADS)
    threads = [threading.Thread(target=run_thread, args=(apis[i], ns, i, programs[i], logs[i], barrier))
               for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert [lg.error for lg in logs if lg.error] == []

    # The list equals the model.
    listed = apis[1].list_namespaced_config_map(ns)
    model = {name: entry for lg in logs for name, entry in lg.model.items()}
    assert {i.metadata.name: (i.data, i.metadata.resource_version) for i in listed.items} == model

    # The replay is exactly the committed writes, per object in order, globally contiguous.
    end_rv = int(listed.metadata.resource_version)
    events = replay(apis[2], ns, start_rv, end_rv)
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    committed = [c for lg in logs for hist in lg.history.values() for c in hist]
    assert rvs == list(range(int(start_rv) + 1, int(start_rv) + 1 + len(committed)))
    assert rvs[-1:] == ([end_rv] if committed else [])
    per_name: dict[str, list[Committed]] = {}
    for e in events:
        obj = e["object"]
        per_name.setdefault(obj["metadata"]["name"], []).append(
            Committed(e["type"], obj["metadata"]["name"], int(obj["metadata"]["resourceVersion"]),
                      obj.get("data")))
    expected = {name: hist for lg in logs for name, hist in lg.history.items() if hist}
    assert set(per_name) == set(expected)
    for name, hist in expected.items():
        got = per_name[name]
        assert [(c.type, c.data) for c in got] == [(c.type, c.data) for c in hist]
        assert [c.rv for c in hist if c.rv is not None] == [g.rv for g, c in zip(got, hist, strict=True)
                                                              if c.rv is not None]

    # A watch from any later resourceVersion replays exactly the suffix.
    if events:
        at = rvs[cut % len(rvs)]
        suffix = replay(apis[0], ns, str(at), end_rv)
        assert suffix == [e for e in events if int(e["object"]["metadata"]["resourceVersion"]) > at]
