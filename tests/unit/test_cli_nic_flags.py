"""NIC's command lines carry over: Go's single-dash flag syntax, NIC's flags implemented with NIC's meaning,
and every NIC flag ingressctl does not implement refused by name unless its value keeps the feature off."""

from __future__ import annotations

import pytest

from ingressctl.cli import build_parser, parse_args
from ingressctl.configs.configmaps import StaticConfigParams, generate_main_config, parse_config_map
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.nic_flags import ANY, UNSUPPORTED_FLAGS
from ingressctl.settings import NginxSettings, Settings


def test_the_args_of_nics_deployment_manifest_parse() -> None:
    s = parse_args([
        "-nginx-configmaps=nginx-ingress/nginx-config", "-report-ingress-status",
        "-external-service=nginx-ingress", "-enable-leader-election", "-v=3", "-enable-prometheus-metrics",
        "-ingress-class=nginx", "-default-server-tls-secret=nginx-ingress/default-server-secret",
        "-enable-snippets",
    ], environ={})
    assert s.controller.nginx_configmaps == "nginx-ingress/nginx-config"
    assert s.controller.report_ingress_status is True and s.controller.external_service == "nginx-ingress"
    assert s.leader_election.enabled is True and s.serving.enable_prometheus_metrics is True
    assert s.log.level == "debug" and s.controller.ingress_class == "nginx"
    assert s.controller.default_server_tls_secret == "nginx-ingress/default-server-secret"
    assert s.controller.enable_snippets is True


@pytest.mark.parametrize(("argv", "attr", "expected"), [
    (["-ingress-class", "other"], "ingress_class", "other"),             # -flag value
    (["-ingress-class=other"], "ingress_class", "other"),                # -flag=value
    (["--ingress-class=other"], "ingress_class", "other"),               # the two-dash form still works
    (["-enable-snippets"], "enable_snippets", True),                     # boolean -flag
    (["-enable-snippets=false"], "enable_snippets", False),
    (["-enable-snippets=true", "-enable-snippets=false"], "enable_snippets", False),  # the last one wins
    (["-report-ingress-status=1"], "report_ingress_status", True),       # Go's ParseBool spellings
])
def test_go_flag_syntax(argv: list[str], attr: str, expected: object) -> None:
    assert getattr(parse_args(argv, environ={}).controller, attr) == expected


@pytest.mark.parametrize(("argv", "level"), [
    (["-v=0"], "info"), (["-v", "2"], "info"), (["-v=3"], "debug"), (["--v=4"], "trace"), (["-v=9"], "trace"),
    (["-v=3", "-log-level=error"], "error"), (["-log-level=error", "-v=3"], "debug"), ([], "info"),
])
def test_glog_verbosity_sets_the_log_level(argv: list[str], level: str) -> None:
    assert parse_args(argv, environ={}).log.level == level


@pytest.mark.parametrize("argv", [["-v=x"], ["-v=-1"], ["-nosuchflag"], ["-ingress-class"],
                                  ["-nginx-status-allow-cidrs=10.0.0.0/33"],
                                  ["-watch-secret-namespace=Bad_NS"],
                                  ["-log-format=logfmt"]])
def test_bad_single_dash_flags_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv, environ={})
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_arguments_after_double_dash_are_not_rewritten(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--", "-enable-snippets"], environ={})
    assert "unrecognized arguments: -- -enable-snippets" in capsys.readouterr().err


def _refused_value(name: str) -> str | None:
    flag = UNSUPPORTED_FLAGS[name]
    if flag.accepts == ANY:
        return None
    if flag.boolean:
        return next((v for v in ("true", "false") if v not in flag.accepts + flag.warns), None)
    return "something"


@pytest.mark.parametrize("name", sorted(UNSUPPORTED_FLAGS))
def test_every_unsupported_nic_flag_is_refused_by_name(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    value = _refused_value(name)
    if value is None:   # no value is refused (the feature it belongs to is, or no value changes anything)
        for v in ("true", "false") if UNSUPPORTED_FLAGS[name].boolean else ("1234",):
            parse_args([f"-{name}={v}"], environ={})
        return
    with pytest.raises(SystemExit) as exc:
        parse_args([f"-{name}={value}"], environ={})
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"error: -{name}={value} is not supported by ingressctl: " in err


def test_helm_chart_defaults_of_unsupported_features_are_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    """What NIC's Helm chart passes with its default values (features off) parses; the two that would
    change nothing a user sees are accepted with a warning naming them."""
    s = parse_args([
        "-nginx-plus=false", "-enable-app-protect=false", "-enable-app-protect-dos=false",
        "-prometheus-tls-secret=", "-enable-service-insight=false", "-service-insight-listen-port=9114",
        "-service-insight-tls-secret=", "-enable-custom-resources=false", "-enable-oidc=false",
        "-enable-cert-manager=false", "-enable-external-dns=false", "-enable-tls-passthrough=false",
        "-ssl-dynamic-reload=true", "-enable-telemetry-reporting=true",
        "-weight-changes-dynamic-reload=false",
        "-nginx-status-allow-cidrs=127.0.0.1,::1", "-nginx-debug=false", "-disable-ipv6=false",
    ], environ={})
    assert s.controller.ingress_class == "nginx"
    err = capsys.readouterr().err
    assert "warning: -ssl-dynamic-reload=true has no effect in ingressctl" in err
    assert "warning: -enable-telemetry-reporting=true has no effect in ingressctl" in err


def test_an_unsupported_flag_needs_its_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["-ingresslink"], environ={})
    assert "flag needs an argument: -ingresslink" in capsys.readouterr().err


def test_watch_secret_namespace() -> None:
    assert parse_args(["-watch-namespace=a,b"], environ={}).kube.watch_secret_namespaces is None
    s = parse_args(["-watch-namespace=a", "-watch-secret-namespace=s1, s2"], environ={})
    assert s.kube.watch_namespaces == ("a",) and s.kube.watch_secret_namespaces == ("s1", "s2")


def test_watch_namespace_label_is_refused_with_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["-watch-namespace-label=team=a"], environ={})
    assert "list them in -watch-namespace" in capsys.readouterr().err


def test_nginx_status_allow_cidrs_reach_the_main_config() -> None:
    s = parse_args(["-nginx-status-allow-cidrs=10.0.0.0/8, 192.168.1.7,fd00::/8"], environ={})
    assert s.nginx.status_allow_cidrs == ("10.0.0.0/8", "192.168.1.7", "fd00::/8")
    static = StaticConfigParams.from_settings(s)
    text = TemplateExecutor().execute_main_template(generate_main_config(static, parse_config_map({})[0]))
    for cidr in ("10.0.0.0/8", "192.168.1.7", "fd00::/8"):
        assert f"allow {cidr};" in text
    assert "allow 127.0.0.1;" not in text


def test_disable_ipv6_drops_the_ipv6_listeners() -> None:
    static = StaticConfigParams.from_settings(parse_args(["-disable-ipv6"], environ={}))
    text = TemplateExecutor().execute_main_template(generate_main_config(static, parse_config_map({})[0]))
    assert static.disable_ipv6 is True and "listen [::]" not in text


@pytest.mark.parametrize(("flag", "data", "off"), [
    (False, {}, False),
    (True, {}, True),
    (True, {"default-server-access-log-off": "false"}, False),   # the ConfigMap key overrides the flag
    (False, {"default-server-access-log-off": "true"}, True),
])
def test_default_server_access_log_off_flag_and_configmap_key(flag: bool, data: dict[str, str],
                                                              off: bool) -> None:
    settings = Settings(nginx=NginxSettings(default_server_access_log_off=flag))
    main = generate_main_config(StaticConfigParams.from_settings(settings), parse_config_map(data)[0])
    assert main.default_server_access_log_off is off
    assert parse_args(["-default-server-access-log-off"], environ={}).nginx.default_server_access_log_off


def test_glog_format_and_include_year() -> None:
    s = parse_args(["-log-format=glog", "-include-year"], environ={})
    assert s.log.format == "glog" and s.log.include_year is True


def test_help_shows_the_default_paths(capsys: pytest.CaptureFixture[str]) -> None:
    build_parser().print_help()
    out = " ".join(capsys.readouterr().out.split())
    assert "(default /etc/nginx)" in out and "(default /var/lib/nginx)" in out
