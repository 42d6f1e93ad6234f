"""The special TLS Secrets (`--default-server-tls-secret`, `--wildcard-tls-secret`): NIC's
handleSpecialSecretUpdate.

Guarantees:
- `files(key)` names the files (`default`, `wildcard` under the secrets dir, NIC's names) written from the
  Secret `key`; empty for any other Secret.
- `sync(key, secret, files)`: a valid change rewrites the files and reloads NGINX (now once the controller is
  ready; before that the start-up reload takes it), with a `SecretUpdated` event; an invalid one is rejected
  with a Warning event and the previous version keeps serving; a failed write is an `UpdatedWithError`
  event; a deleted one keeps its files (new pods will not start until it exists again), with a log line.
- Runs on the sync thread, like every other sync.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ingressctl.configs.files import ReloadOutcome
from ingressctl.controller.options import ControllerOptions
from ingressctl.controller.reporter import EVENT_NORMAL, EVENT_WARNING, REASON_REJECTED, Reporter
from ingressctl.controller.secrets import tls_file_content, validate_tls_secret
from ingressctl.k8s.resource import SECRETS
from ingressctl.logging import get_logger
from ingressctl.secret_types import SecretValidationError

log = get_logger(__name__)

REASON_UPDATED_WITH_ERROR = "UpdatedWithError"
REASON_SECRET_UPDATED = "SecretUpdated"
SPECIAL_DEFAULT, SPECIAL_WILDCARD = "default", "wildcard"    # file names under the secrets dir (NIC's)


class SpecialSecretWriter(Protocol):
    def update_special_secret(self, name: str, content: bytes) -> bool: ...


class SpecialSecrets:
    """See the module docstring."""

    def __init__(self, options: ControllerOptions, configurator: SpecialSecretWriter, reporter: Reporter,
                 is_ready: Callable[[], bool], reload: Callable[[str], ReloadOutcome | None]) -> None:
        self.options = options
        self.configurator = configurator
        self.reporter = reporter
        self._is_ready = is_ready
        self._reload = reload

    def files(self, key: str) -> list[str]:
        """The files (`default`, `wildcard`) written from the Secret `key`, if it is a special one."""
        o = self.options
        return [f for f, ref in ((SPECIAL_DEFAULT, o.default_server_tls_secret),
                                 (SPECIAL_WILDCARD, o.wildcard_tls_secret)) if ref == key]

    def sync(self, key: str, secret: dict[str, Any] | None, files: list[str]) -> None:
        """See the module docstring."""
        if secret is None:
            log.warning("a special TLS Secret was deleted: this pod keeps the previous version; new pods "
                        "will not start until it exists again", secret=key)
            return
        try:
            validate_tls_secret(secret)
            content = tls_file_content(secret)
        except SecretValidationError as e:
            self.reporter.event_for(secret, SECRETS, EVENT_WARNING, REASON_REJECTED,
                                    f"the special Secret {key} was rejected, using the previous version: {e}")
            return
        changed = False
        for f in files:
            try:
                changed = self.configurator.update_special_secret(f, content) or changed
            except OSError as e:
                log.error("writing a special TLS Secret failed", secret=key, error=str(e))
                self.reporter.event_for(secret, SECRETS, EVENT_WARNING, REASON_UPDATED_WITH_ERROR,
                                        f"the special Secret {key} was updated, but not applied: {e}")
                return
        if not changed:
            return
        self.reporter.event_for(secret, SECRETS, EVENT_NORMAL, REASON_SECRET_UPDATED,
                                f"the special Secret {key} was updated")
        if self._is_ready():
            self.reporter.mark_failed([], self._reload("secret"))
