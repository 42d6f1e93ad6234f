"""ingress-nginx's `upstream-hash-by-subset` and `-subset-size`: approximated by `upstream-hash-by`'s plain
consistent hashing, validated as ingress-nginx validates them, rendering nothing of their own."""

from __future__ import annotations

import pytest

from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.annotations_ingress_nginx import PREFIX as N
from ingressctl.kinds.ingress.ingress_nginx.translate import translate

HASH = {N + "upstream-hash-by": "$request_uri"}


def statuses(annotations: dict[str, str]) -> dict[str, Status]:
    return {e.key.removeprefix(N): e.status for e in translate(annotations).report}


def test_with_upstream_hash_by_the_subset_is_approximated_by_plain_consistent_hashing() -> None:
    annotations = {**HASH, N + "upstream-hash-by-subset": "true", N + "upstream-hash-by-subset-size": "2"}
    tr = translate(annotations)
    assert statuses(annotations) == {
        "upstream-hash-by": Status.TRANSLATED, "upstream-hash-by-subset": Status.APPROXIMATED,
        "upstream-hash-by-subset-size": Status.APPROXIMATED}
    assert tr.overrides["lb_method"] == "hash $request_uri consistent"
    assert tr.overrides == translate(HASH).overrides  # nothing of their own
    assert tr.problems == ()
    assert tr.warnings == (
        "ingress-nginx annotations not honoured in full: "
        f"{N}upstream-hash-by-subset approximated (ingress-nginx hashed a key to a subset of "
        "`upstream-hash-by-subset-size` endpoints and picked one of them at random per request; here a key "
        "always reaches the same endpoint. `false` is served; ignored without `upstream-hash-by`); "
        f"{N}upstream-hash-by-subset-size approximated (no subsets (see `upstream-hash-by-subset`); ignored "
        "unless `upstream-hash-by-subset` is true)",)


@pytest.mark.parametrize(("annotations", "expected"), [
    ({N + "upstream-hash-by-subset": "true"}, {"upstream-hash-by-subset": Status.IGNORED}),
    ({N + "upstream-hash-by-subset-size": "3"}, {"upstream-hash-by-subset-size": Status.IGNORED}),
    ({**HASH, N + "upstream-hash-by-subset": "false", N + "upstream-hash-by-subset-size": "3"},
     {"upstream-hash-by": Status.TRANSLATED, "upstream-hash-by-subset": Status.SERVED,
      "upstream-hash-by-subset-size": Status.IGNORED}),
    ({**HASH, N + "upstream-hash-by-subset-size": "3"},
     {"upstream-hash-by": Status.TRANSLATED, "upstream-hash-by-subset-size": Status.IGNORED}),
    ({**HASH, N + "upstream-hash-by-subset": "1"},
     {"upstream-hash-by": Status.TRANSLATED, "upstream-hash-by-subset": Status.APPROXIMATED}),
])
def test_statuses(annotations: dict[str, str], expected: dict[str, Status]) -> None:
    assert statuses(annotations) == expected
    reasons = {e.key: e.reason for e in translate(annotations).report}
    if expected.get("upstream-hash-by-subset") is Status.IGNORED:
        assert reasons[N + "upstream-hash-by-subset"] == f"{N}upstream-hash-by is not set (ingress-nginx " \
                                                          "ignores it too)"


@pytest.mark.parametrize(("name", "value", "detail"), [
    ("upstream-hash-by-subset", "yes", "must be a boolean"),
    ("upstream-hash-by-subset-size", "three", "must be an integer"),
    ("upstream-hash-by-subset-size", "-1", "must be between 0 and 1048576"),
    ("upstream-hash-by-subset-size", "3; evil", "must be an integer"),
])
def test_invalid_values_reject_the_ingress(name: str, value: str, detail: str) -> None:
    tr = translate({**HASH, N + name: value})
    assert [(p.key, p.value, p.detail, p.refused) for p in tr.problems] == [(N + name, value, detail, False)]
