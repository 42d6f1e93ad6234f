"""The admission webhook's flags: NIC-style names, single- and double-dash, TLS from files or a Secret."""

from __future__ import annotations

import pytest

from ingressctl.cli import parse_args


def test_off_by_default() -> None:
    w = parse_args([], environ={}).admission_webhook
    assert w.enabled is False and w.port == 8443


@pytest.mark.parametrize("dash", ["-", "--"])
def test_files_and_port_in_either_dash_form(dash: str) -> None:
    w = parse_args([f"{dash}enable-admission-webhook", f"{dash}admission-webhook-port=9443",
                    f"{dash}admission-webhook-tls-cert-file", "/c.pem",
                    f"{dash}admission-webhook-tls-key-file=/k.pem"], environ={}).admission_webhook
    assert (w.enabled, w.port, w.tls_cert_file, w.tls_key_file, w.tls_secret) == (
        True, 9443, "/c.pem", "/k.pem", None)


def test_secret() -> None:
    w = parse_args(["-enable-admission-webhook=true", "-admission-webhook-tls-secret=nginx/webhook-cert"],
                   environ={}).admission_webhook
    assert w.enabled and w.tls_secret == "nginx/webhook-cert"


@pytest.mark.parametrize(("argv", "message"), [
    (["--enable-admission-webhook"], "needs --admission-webhook-tls-cert-file"),
    (["--admission-webhook-tls-cert-file", "/c"], "go together"),
    (["--admission-webhook-tls-cert-file", "/c", "--admission-webhook-tls-key-file", "/k",
      "--admission-webhook-tls-secret", "a/b"], "not both"),
    (["--admission-webhook-tls-secret", "no-slash"], "must be <namespace>/<name>"),
    (["--admission-webhook-port", "0"], "outside 1-65535"),
    (["--enable-admission-webhook", "--admission-webhook-tls-secret", "a/b", "--admission-webhook-port",
      "8081"], "is also --ready-status-port"),
])
def test_invalid_combinations(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv, environ={})
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
