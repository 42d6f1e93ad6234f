"""NIC 5.2-5.5 flags: -enable-directive-autoadjust (proxy buffer settings raised just enough for NGINX),
-enable-config-safety (ingressctl's own test-and-isolate path, whatever the value) and the -unix / -unix-ms
log formats."""

from __future__ import annotations

import io
import json
import re
import time

import pytest

from ingressctl.cli import build_parser, parse_args
from ingressctl.configs import parsing
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, parse_config_map
from ingressctl.logging import configure_logging
from ingressctl.nginx.capabilities import Capabilities
from ingressctl.nic_flags import UNSUPPORTED_FLAGS
from ingressctl.settings import LogSettings
from tests.unit.test_configs_annotations import STATIC, cafe, render
from tests.unit.test_configs_ingress import block


def test_the_flags_parse_nic_style() -> None:
    s = parse_args(["-enable-directive-autoadjust", "-enable-config-safety=true"], environ={})
    assert s.controller.enable_directive_autoadjust is True
    assert StaticConfigParams.from_settings(s).enable_directive_autoadjust is True
    s = parse_args(["-enable-config-safety=false"], environ={})
    assert s.controller.enable_directive_autoadjust is False
    assert "enable-config-safety" not in UNSUPPORTED_FLAGS
    assert "enable-directive-autoadjust" not in UNSUPPORTED_FLAGS


def test_help_says_how_config_safety_relates_to_ingressctls_own_path() -> None:
    text = " ".join(build_parser().format_help().split())
    assert re.search(r"--enable-config-safety.*ingressctl always does this: every change is tested with "
                     r"nginx -t.*rejecting only the offending resources.*both values give that behaviour",
                     text)


@pytest.mark.parametrize(("buffers", "size", "busy", "temp", "expected"), [
    ("8 4k", "16k", "", "", ("9 4k", "16k", "", "")),          # default busy 2 x 16k needs 9 buffers of 4k
    ("8 4k", "", "64k", "", ("17 4k", "", "64k", "")),         # 16 buffers but one hold 64k
    ("8 8k", "", "4k", "", ("8 8k", "", "8k", "")),            # busy at least one buffer
    ("2 1k", "", "", "", ("9 1k", "", "", "")),                # default buffer size is a page (4k here)
    ("8 4k", "", "", "1k", ("8 4k", "", "", "4k")),            # temp file at least a buffer
])
def test_balance_proxy_buffers(buffers: str, size: str, busy: str, temp: str,
                               expected: tuple[str, str, str, str]) -> None:
    assert parsing.buffers_problem(buffers, size, temp, 4096, proxy_busy_buffers_size=busy) != ""
    result = parsing.balance_proxy_buffers(buffers, size, busy, temp, 4096)
    assert result == expected
    assert parsing.buffers_problem(result[0], result[1], result[3], 4096,
                                   proxy_busy_buffers_size=result[2]) == ""


def test_autoadjust_rewrites_what_nginx_would_refuse_with_a_warning() -> None:
    anns = {"nginx.org/proxy-buffers": "4 8k", "nginx.org/proxy-busy-buffers-size": "64k"}
    text, warnings = render(cafe(anns))
    assert "proxy_buffers" not in text and "NGINX would refuse them" in warnings[0]
    auto = StaticConfigParams(**{**STATIC.__dict__, "enable_directive_autoadjust": True})
    text, warnings = render(cafe(anns), static=auto)
    loc = block(text, "location = /tea")
    assert "        proxy_buffers 9 8k;\n" in loc and "        proxy_busy_buffers_size 64k;\n" in loc
    assert warnings == ["proxy buffer settings adjusted (-enable-directive-autoadjust; "
                        "proxy-busy-buffers-size must be less than the size of all proxy buffers minus one "
                        "buffer): proxy-buffers '4 8k' -> '9 8k'"]
    # ConfigMap values go through the same path.
    params, errors = parse_config_map({"proxy-buffers": "2 4k", "proxy-buffer-size": "8k"})
    assert errors == []
    text, warnings = render(cafe({}), params, static=auto)
    assert "        proxy_buffers 5 4k;\n" in block(text, "location = /tea") and len(warnings) == 1
    text, warnings = render(cafe({}), ConfigParams(), static=auto)
    assert warnings == []  # nothing to adjust


@pytest.mark.parametrize(("fmt", "digits"), [("json-unix", 10), ("json-unix-ms", 13)])
def test_unix_json_log_formats(fmt: str, digits: int) -> None:
    import structlog

    out = io.StringIO()
    configure_logging(LogSettings(format=fmt, level="info"), stream=out)
    before = time.time()
    structlog.get_logger("t").info("hello", key="v")
    line = json.loads(out.getvalue().strip().splitlines()[-1])
    assert line["event"] == "hello" and line["key"] == "v"
    assert isinstance(line["timestamp"], int) and len(str(line["timestamp"])) == digits
    scale = 1000 if digits == 13 else 1
    assert int(before * scale) <= line["timestamp"] <= int(time.time() * scale)
    configure_logging(LogSettings())


def test_unix_text_log_format() -> None:
    import structlog

    out = io.StringIO()
    configure_logging(LogSettings(format="text-unix-ms", level="info"), stream=out)
    structlog.get_logger("t").info("hello")
    assert re.match(r"\d{13} \[info", out.getvalue().strip().splitlines()[-1]), out.getvalue()
    configure_logging(LogSettings())
    assert parse_args(["-log-format=text-unix"], environ={}).log.format == "text-unix"


def test_main_config_without_the_stub_status_module() -> None:
    from ingressctl.configs.configmaps import generate_main_config
    from ingressctl.configs.templates import TemplateExecutor

    without = StaticConfigParams(**{**STATIC.__dict__, "nginx_status": True,
                                         "capabilities": Capabilities(modules=frozenset())})
    text = TemplateExecutor().execute_main_template(generate_main_config(without, ConfigParams()))
    assert "stub_status" not in text and "nginx-status.sock" not in text
    text = TemplateExecutor().execute_main_template(generate_main_config(STATIC, ConfigParams()))
    assert "nginx-status.sock" in text and "stub_status;" in text


def test_allow_empty_ingress_host_validation_and_render() -> None:
    from ingressctl.configs.templates import TemplateExecutor
    from ingressctl.kinds.ingress.config import catch_all_upstream, generate_nginx_config
    from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
    from ingressctl.kinds.ingress.validation import validate_ingress
    from ingressctl.validation import aggregate_message
    from tests.unit.test_configs_ingress import ingress, path

    assert parse_args(["-allow-empty-ingress-host"], environ={}).controller.allow_empty_ingress_host is True
    assert "allow-empty-ingress-host" not in UNSUPPORTED_FLAGS
    hostless = {"http": {"paths": [path("/tea", "tea")]}}
    named = {"host": "cafe.example.com", "http": {"paths": [path("/", "tea")]}}
    ing = ingress("cafe", rules=[hostless, named])
    assert "spec.rules[0].host: Required value" in aggregate_message(validate_ingress(ing))
    assert validate_ingress(ing, allow_empty_host=True) == []
    two = ingress("cafe", rules=[hostless, {"host": "", "http": {"paths": [path("/c", "tea")]}}])
    assert 'spec.rules[1].host: Duplicate value: ""' in aggregate_message(
        validate_ingress(two, allow_empty_host=True))
    bad = ingress("cafe", rules=[hostless], tls=[{"hosts": [""], "secretName": "s"}],
                  annotations={"nginx.org/listen-ports": "81", "nginx.org/mergeable-ingress-type": "minion"})
    message = aggregate_message(validate_ingress(bad, allow_empty_host=True))
    for part in ("annotations.nginx.org/listen-ports: Forbidden: not allowed with a rule without a host",
                 "spec.tls[0].hosts: Forbidden: an empty host cannot have TLS"):
        assert part in message, message
    # NIC 5.5: a host-less master (and host-less minions) share the default server across namespaces.
    assert "rules[0].host" not in message
    master = ingress("shop", rules=[{"host": ""}], annotations={"nginx.org/mergeable-ingress-type": "master"})
    minion = ingress("tea", rules=[hostless], annotations={"nginx.org/mergeable-ingress-type": "minion"})
    assert validate_ingress(master, allow_empty_host=True) == []
    assert validate_ingress(minion, allow_empty_host=True) == []
    assert "spec.rules[0].host: Required value" in aggregate_message(validate_ingress(master))
    # Rendered as the catch-all server, with its own paths; without a defaultBackend it names no upstream for
    # the other servers' unmatched paths.
    ex = IngressEx(ing, {"": True, "cafe.example.com": True}, {backend_key("tea", 80): ["10.0.0.1:80"]})
    cfg, warnings = generate_nginx_config(ex, STATIC, ConfigParams())
    text = TemplateExecutor().execute_ingress_template(cfg)
    assert warnings == [] and [s.name for s in cfg.servers] == ["", "cafe.example.com"]
    assert cfg.servers[0].catch_all and "location /tea/" in block(text, "server")
    assert catch_all_upstream(ex) == ""
