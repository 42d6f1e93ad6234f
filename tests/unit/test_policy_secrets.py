"""Policy Secrets: nginx.org/apikey Secrets are supported, validated (unique, non-empty, UTF-8, no
control characters) and written as map entries with mode 0600; a policy's Secret fields resolve in the
Policy's namespace."""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import Any

import pytest

from ingressctl.controller.handlers import is_supported_secret
from ingressctl.controller.secrets import LocalSecretStore
from ingressctl.kinds.policy.secrets import policy_secret_keys, resolve_policy_secrets
from ingressctl.policies.api_key import validate_apikey_secret
from ingressctl.secret_types import SecretReference, SecretValidationError
from tests.unit.test_secrets import DirManager


def apikeys(**keys: bytes) -> dict[str, Any]:
    return {"metadata": {"name": "keys", "namespace": "demo"}, "type": "nginx.org/apikey",
            "data": {c: base64.b64encode(k).decode() for c, k in keys.items()}}


def test_apikey_secrets_are_supported_and_written_as_map_entries(tmp_path: Path) -> None:
    assert is_supported_secret(apikeys(a=b"k"))
    store = LocalSecretStore(DirManager(tmp_path))
    store.add_or_update_secret(apikeys(alice=b"Key-1", bob=b"k 2"))
    ref = store.get_secret_reference("demo/keys")
    assert (ref.error, ref.secret_type) == ("", "nginx.org/apikey")
    assert Path(ref.path).read_text().splitlines() == ['"~^Key\\\\-1$" "=alice";', '"~^k\\\\ 2$" "=bob";']
    assert stat.S_IMODE(Path(ref.path).stat().st_mode) == 0o600


@pytest.mark.parametrize(("keys", "message"), [
    ({"a": b"same", "b": b"same"}, "API Keys cannot be repeated"),
    ({"a": b""}, "the API key of client a is empty"),
    ({"a": b"\xff\xfe"}, "the API key of client a is not valid UTF-8"),
    ({"a": b"new\nline"}, "the API key of client a contains a control character"),
])
def test_invalid_apikey_secrets(keys: dict[str, bytes], message: str) -> None:
    with pytest.raises(SecretValidationError, match=message):
        validate_apikey_secret(apikeys(**keys))


def test_policy_secret_fields_resolve_in_the_policy_namespace() -> None:
    pol = {"metadata": {"name": "p", "namespace": "team"}, "spec": {"basicAuth": {"secret": "users"}}}
    assert policy_secret_keys(pol) == ["team/users"]
    assert policy_secret_keys({"metadata": {}, "spec": {"accessControl": {"allow": ["1.1.1.1"]}}}) == []
    refs = resolve_policy_secrets(pol, lambda k: SecretReference(k, "/p", secret_type="nginx.org/htpasswd"))
    assert refs["secret"].key == "team/users" and refs["secret"].path == "/p"
