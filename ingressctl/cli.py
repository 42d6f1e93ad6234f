"""Command line: NIC's flag names parsed into a frozen `Settings`.

Flags are written as in NIC's manifests and Helm chart (Go's flag syntax: `-flag=value`, `-flag value`,
boolean `-flag` or `-flag=false`) or with two dashes; `go_style_argv` turns the former into the latter before
argparse sees them. NIC flags whose features ingressctl lacks are checked against `ingressctl.nic_flags`: the
value that leaves the feature off is accepted, any other is refused naming the flag.

`parse_args` never starts anything; it fails with argparse's usage error (exit 2) on any invalid flag value or
combination, so a bad command line is reported before a single API call is made.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import sys
from collections.abc import Sequence

from ingressctl import __version__
from ingressctl.flag_values import bool_flag
from ingressctl.nic_flags import UNSUPPORTED_FLAGS
from ingressctl.settings import (
    AdmissionWebhookSettings,
    ControllerSettings,
    KubeSettings,
    LeaderElectionSettings,
    LogSettings,
    NginxSettings,
    ServingSettings,
    Settings,
    pod_identity,
)

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LOG_LEVELS = ("trace", "debug", "info", "warning", "error", "fatal")
LOG_FORMATS = ("text", "json", "glog", "text-unix", "text-unix-ms", "json-unix", "json-unix-ms")
DEFAULT_STATUS_ALLOW_CIDRS = "127.0.0.1,::1"


def _namespaced_name(value: str) -> str:
    parts = value.split("/")
    if len(parts) != 2 or not _DNS1123_LABEL.match(parts[0]) or not _DNS1123_SUBDOMAIN.match(parts[1]):
        raise argparse.ArgumentTypeError(f"invalid value {value!r}: must be <namespace>/<name>")
    return value


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {value!r}") from None
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"port {port} is outside 1-65535")
    return port


def _int_at_least(value: str, minimum: int, what: str = "number") -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid {what} {value!r}") from None
    if number < minimum:
        raise argparse.ArgumentTypeError(f"{what} {number} must be at least {minimum}")
    return number


def _positive_int(value: str) -> int:
    return _int_at_least(value, 1)


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds {value!r}") from None
    if not 0 < number < 86400:
        raise argparse.ArgumentTypeError(f"{value} must be greater than 0 and less than a day")
    return number


def _glog_verbosity(value: str) -> str:
    """NIC's older glog `-v=N` as a log level: 0-2 info, 3 debug, 4 and more trace."""
    v = _int_at_least(value, 0, "verbosity")
    return "info" if v < 3 else "debug" if v == 3 else "trace"


def _cidrs(value: str) -> tuple[str, ...]:
    out: list[str] = []
    for item in value.split(","):
        item = item.strip()
        try:
            out.append(str(ipaddress.ip_network(item, strict=False)) if "/" in item
                       else str(ipaddress.ip_address(item)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid IP address or CIDR {item!r} in {value!r}") from None
    return tuple(out)


def go_style_argv(argv: Sequence[str], parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """Rewrite Go-style flags for argparse and take out NIC flags from `ingressctl.nic_flags`.

    Returns (argv for argparse, warnings). `-name...` becomes `--name...` when `--name` is a flag of
    `parser` (an unknown `-name` is left for argparse to reject). A flag of the NIC table is checked: an
    accepted value is dropped (with a warning where the table has one), any other value calls
    `parser.error` naming the flag. Everything after `--` is left as it is, as Go's flag package does."""
    out: list[str] = []
    warnings: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            out += args[i - 1:]
            break
        if not arg.startswith("-") or arg in ("-", "-h"):
            out.append(arg)
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        nic = UNSUPPORTED_FLAGS.get(name)
        if nic is not None:
            if not eq:
                if nic.boolean:
                    value = "true"
                elif i < len(args):
                    value, i = args[i], i + 1
                else:
                    parser.error(f"flag needs an argument: -{name}")
            if nic.boolean:
                try:
                    value = str(bool_flag(value)).lower()
                except argparse.ArgumentTypeError as e:
                    parser.error(f"-{name}: {e}")
            ok, message = nic.check(value.strip())
            if not ok:
                parser.error(message)
            if message:
                warnings.append(message)
            continue
        if not arg.startswith("--") and (f"--{name}" in parser._option_string_actions or name == "help"):
            arg = "-" + arg
        out.append(arg)
    return out, warnings


def _flag(parser: argparse._ActionsContainer, name: str, default: bool, help_text: str) -> None:
    """A Go-style boolean flag: `--name`, `--name=true` or `--name=false`."""
    parser.add_argument(
        name, nargs="?", const=True, default=default, type=bool_flag, metavar="BOOL",
        help=f"{help_text} (default {str(default).lower()})",
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ingressctl",
        description="NGINX Ingress Controller for Kubernetes (Ingress resources, networking.k8s.io/v1).",
        epilog="ingressctl migrate-report (--kubeconfig PATH | --from-files DIR): what "
               "--ingress-nginx-compat would make of the Ingresses written for ingress-nginx (see "
               "ingressctl migrate-report --help).",
    )
    p.add_argument("--version", action="version", version=f"ingressctl {__version__}")
    k = p.add_argument_group("Kubernetes")
    k.add_argument("--kubeconfig",
                   help="path to a kubeconfig; default: in-cluster, then $KUBECONFIG, ~/.kube/config")
    k.add_argument("--ingress-class", default="nginx",
                   help="the IngressClass this controller serves (default nginx)")
    k.add_argument("--watch-namespace", default="", help="comma-separated namespaces to watch (default: all)")
    k.add_argument("--watch-secret-namespace", default="",
                   help="comma-separated namespaces whose Secrets are watched (default: those of "
                        "--watch-namespace)")
    k.add_argument("--nginx-configmaps", type=_namespaced_name,
                   help="<namespace>/<name> of the NGINX ConfigMap")
    k.add_argument("--default-server-tls-secret", type=_namespaced_name,
                   help="<namespace>/<name> of the TLS Secret for the default server")
    k.add_argument("--wildcard-tls-secret", type=_namespaced_name,
                   help="<namespace>/<name> of a TLS Secret used by TLS hosts that name no secret")
    _flag(k, "--report-ingress-status", False, "write the load balancer address to Ingress status")
    k.add_argument("--external-service", help="Service whose external address is reported in Ingress status")
    _flag(k, "--enable-snippets", False, "allow server-snippets and location-snippets annotations")
    _flag(k, "--ingress-nginx-compat", False,
          "also serve the IngressClasses of the community ingress-nginx controller (spec.controller "
          "k8s.io/ingress-nginx) and the annotation kubernetes.io/ingress.class: nginx, and read the "
          "nginx.ingress.kubernetes.io/* annotations on every Ingress served "
          "(docs/ingress-nginx-migration.md)")
    _flag(k, "--enable-custom-resources", True, "serve the k8s.nginx.org VirtualServer and TransportServer "
          "resources (their CRDs must be installed)")
    _flag(k, "--enable-directive-autoadjust", False,
          "raise proxy-buffers, proxy-busy-buffers-size and proxy-max-temp-file-size (ConfigMap or "
          "annotations) just enough that NGINX accepts them, with a warning, instead of leaving them out")
    k.add_argument("--load-certificates-per-handshake", nargs="?", const=True, default=None, type=bool_flag,
                   metavar="BOOL",
                   help="Ingress TLS servers share the default server's SSL context, which loads each host's "
                        "certificate at TLS handshakes instead of at every reload (a reload saves ~1 ms per "
                        "certificate). Default: on when NGINX caches such certificates: NGINX 1.27.4+ "
                        "(ssl_certificate_cache), or older NGINX with ingressctl's certificate-cache module "
                        "installed (--enable-certificate-cache); without either, NGINX would parse them at "
                        "every full handshake, about doubling its cost")
    _flag(k, "--allow-empty-ingress-host", False,
          "allow one rule per Ingress without a host: it serves the hosts no other server names, as the "
          "class-wide catch-all (an Ingress without rules, with a defaultBackend) does, and competes with it "
          "for that place (the oldest wins)")
    _flag(k, "--enable-config-safety", False,
          "NIC's test-and-roll-back of each config write. ingressctl always does this: every change is "
          "tested with nginx -t and a failed reload is bisected on a staging copy, rejecting only the "
          "offending resources while the last good config keeps serving; both values give that behaviour")
    _flag(k, "--enable-tls-passthrough", False,
          "TransportServers on the tls-passthrough listener (needs --enable-custom-resources)")
    k.add_argument("--tls-passthrough-port", type=_port, default=443,
                   help="the port TLS passthrough owns; HTTPS servers are reached behind it (default 443)")
    k.add_argument("--global-configuration", type=_namespaced_name,
                   help="<namespace>/<name> of the GlobalConfiguration defining the TransportServer "
                        "listeners and the VirtualServer `spec.listener` HTTP listeners (needs "
                        "--enable-custom-resources)")
    _flag(k, "--enable-leader-election", True, "elect one replica to write status, using a Lease")
    k.add_argument("--leader-election-lock-name", default="nginx-ingress-leader-election",
                   help="name of the Lease in POD_NAMESPACE")

    n = p.add_argument_group("NGINX")
    n.add_argument("--nginx-binary", default="nginx", help="the NGINX executable (default nginx)")
    _flag(n, "--nginx-debug", False, "run an NGINX built with debug logging (nginx-debug, or an nginx "
          "built --with-debug); set error-log-level: debug in the ConfigMap")
    n.add_argument("--nginx-conf-dir", default="/etc/nginx",
                   help="where the configuration is written (default /etc/nginx)")
    n.add_argument("--nginx-run-dir", default="/var/lib/nginx",
                   help="sockets, PEM files and state (default /var/lib/nginx)")
    n.add_argument("--nginx-reload-timeout", type=_positive_int, default=60000,
                   help="ms to wait for NGINX to serve a new configuration version (default 60000)")
    n.add_argument("--default-http-listener-port", type=_port, default=80,
                   help="NGINX's HTTP port for every server (default 80)")
    n.add_argument("--default-https-listener-port", type=_port, default=443,
                   help="NGINX's HTTPS port for every server (default 443)")
    _flag(n, "--health-status", False, "serve a health location on the default server")
    n.add_argument("--health-status-uri", default="/nginx-health",
                   help="path of the --health-status location (default /nginx-health)")
    _flag(n, "--nginx-status", True, "serve stub_status on --nginx-status-port")
    n.add_argument("--nginx-status-port", type=_port, default=8080,
                   help="port of NGINX's stub_status page (default 8080)")
    n.add_argument("--nginx-status-allow-cidrs", type=_cidrs, default=DEFAULT_STATUS_ALLOW_CIDRS,
                   help="comma-separated IP addresses and CIDRs allowed to read the stub_status page "
                        f"(default {DEFAULT_STATUS_ALLOW_CIDRS})")
    _flag(n, "--disable-ipv6", False, "no IPv6 listeners (they are also left out where the host has no IPv6)")
    _flag(n, "--default-server-access-log-off", False,
          "no access log for the default server; the ConfigMap key of the same name overrides it")
    _flag(n, "--enable-dynamic-upstreams", True,
          "apply endpoint changes without reloading NGINX, where ingressctl's dynamic-peers NGINX module "
          "is installed (scripts/build-nginx-module.sh)")
    _flag(n, "--enable-dynamic-routes", True,
          "serve the hosts of plain Ingresses from the table of ingressctl's routes NGINX module instead of "
          "server blocks, where it is installed (scripts/build-nginx-module.sh): their changes, hosts added "
          "and removed included, reach NGINX without reloads, and reloads of many Ingresses are shorter "
          "(needs --enable-dynamic-upstreams; off with latency metrics)")
    _flag(n, "--enable-certificate-cache", True,
          "on NGINX without ssl_certificate_cache (< 1.27.4), cache the certificates loaded at TLS "
          "handshakes (--load-certificates-per-handshake) in ingressctl's certificate-cache NGINX module, "
          "where it is installed (scripts/build-nginx-module.sh): each worker parses a certificate once, "
          "not at every handshake")
    n.add_argument("--main-template-path", help="a custom main template (Jinja2)")
    n.add_argument("--ingress-template-path", help="a custom Ingress template (Jinja2)")
    n.add_argument("--transportserver-template-path", help="a custom TransportServer template (Jinja2)")
    n.add_argument("--virtualserver-template-path", help="a custom VirtualServer template (Jinja2)")

    s = p.add_argument_group("Serving")
    _flag(s, "--ready-status", True, "serve /nginx-ready on --ready-status-port")
    s.add_argument("--ready-status-port", type=_port, default=8081,
                   help="port of /nginx-ready (readiness) and /healthz (liveness) (default 8081)")
    _flag(s, "--enable-prometheus-metrics", False, "serve Prometheus metrics")
    s.add_argument("--prometheus-metrics-listen-port", type=_port, default=9113,
                   help="port of /metrics (default 9113)")
    _flag(s, "--enable-latency-metrics", False,
          "collect upstream latency from NGINX's syslog (needs metrics)")

    w = p.add_argument_group("Admission webhook")
    _flag(w, "--enable-admission-webhook", False,
          "serve a validating admission webhook (POST /validate over HTTPS) for Ingresses and VirtualServers")
    w.add_argument("--admission-webhook-port", type=_port, default=8443,
                   help="port of the admission webhook (default 8443)")
    w.add_argument("--admission-webhook-tls-cert-file", metavar="PATH",
                   help="PEM certificate (chain) of the admission webhook; re-read when it changes")
    w.add_argument("--admission-webhook-tls-key-file", metavar="PATH",
                   help="PEM private key of the admission webhook; re-read when it changes")
    w.add_argument("--admission-webhook-tls-secret", type=_namespaced_name,
                   help="<namespace>/<name> of a kubernetes.io/tls Secret for the admission webhook, "
                        "instead of the files")

    lg = p.add_argument_group("Logging")
    lg.add_argument("--log-format", choices=LOG_FORMATS, default="text",
                    help="text (key=value), json lines, or glog's line format; the -unix and -unix-ms "
                         "variants stamp each line with Unix seconds or milliseconds (default text)")
    lg.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="(default info)")
    lg.add_argument("--v", dest="log_level", type=_glog_verbosity, default=argparse.SUPPRESS, metavar="N",
                    help="glog verbosity of older NIC manifests: 0-2 info, 3 debug, 4 or more trace "
                         "(the later of --v and --log-level wins)")
    _flag(lg, "--include-year", False, "the year in the header of glog lines")

    dev = p.add_argument_group("Development")
    _flag(dev, "--legacy-startup", False, "the pre-5.5 start-up path, kept as a benchmark baseline")
    dev.add_argument("--startup-render-processes", type=lambda v: _int_at_least(v, 0), default=0, metavar="N",
                     help="processes that render the configuration at start-up: 0 for one per CPU this "
                          "process may use (capped by its cgroup's CPU limit, at most 4), 1 for the sync "
                          "thread alone (default 0)")
    le = LeaderElectionSettings()
    dev.add_argument("--leader-election-lease-duration", type=_positive_int, default=int(le.lease_duration_s),
                     metavar="SECONDS", help="how long a Lease stays valid without a renewal "
                     f"(default {int(le.lease_duration_s)})")
    dev.add_argument("--leader-election-renew-deadline", type=_seconds, default=le.renew_deadline_s,
                     metavar="SECONDS", help="a leader steps down when it could not renew for this long "
                     f"(default {le.renew_deadline_s:g})")
    dev.add_argument("--leader-election-retry-period", type=_seconds, default=le.retry_period_s,
                     metavar="SECONDS",
                     help=f"time between election attempts (default {le.retry_period_s:g})")
    return p


def parse_args(argv: Sequence[str] | None = None, environ: dict[str, str] | None = None) -> Settings:
    """Parse and validate the command line into `Settings`; exits with status 2 on an invalid one."""
    parser = build_parser()
    args, warnings = go_style_argv(sys.argv[1:] if argv is None else argv, parser)
    a = parser.parse_args(args)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)

    uri = a.health_status_uri
    if not uri.startswith("/") or uri == "/" or re.search(r"[\s{};]", uri):
        parser.error(f"invalid --health-status-uri {uri!r}: must start with '/', not be '/', "
                     "and contain no whitespace, '{', '}' or ';'")
    if not _DNS1123_LABEL.match(a.leader_election_lock_name):
        parser.error(f"invalid --leader-election-lock-name {a.leader_election_lock_name!r}: "
                     "must be a DNS-1123 label")
    lease, renew, retry = (a.leader_election_lease_duration, a.leader_election_renew_deadline,
                           a.leader_election_retry_period)
    if not lease > renew > 1.2 * retry:
        parser.error(f"leader election timings must satisfy lease duration ({lease}) > renew deadline "
                     f"({renew:g}) > 1.2 * retry period ({retry:g})")
    namespaces = _namespaces(parser, a.watch_namespace, "--watch-namespace")
    secret_namespaces = (_namespaces(parser, a.watch_secret_namespace, "--watch-secret-namespace")
                         if a.watch_secret_namespace.strip() else None)
    if a.external_service and not _DNS1123_LABEL.match(a.external_service):
        parser.error(f"invalid --external-service {a.external_service!r}: must be a Service name")
    if a.default_http_listener_port == a.default_https_listener_port:
        parser.error("--default-http-listener-port and --default-https-listener-port must differ")
    latency = a.enable_latency_metrics
    if latency and not a.enable_prometheus_metrics:
        print("warning: --enable-latency-metrics needs --enable-prometheus-metrics; turned off",
              file=sys.stderr)
        latency = False

    if a.global_configuration and not a.enable_custom_resources:
        parser.error("--global-configuration needs --enable-custom-resources")
    if a.enable_tls_passthrough and not a.enable_custom_resources:
        parser.error("--enable-tls-passthrough needs --enable-custom-resources")
    webhook = _admission_webhook(parser, a)
    pod_ns, pod_name = pod_identity(environ)
    return Settings(
        kube=KubeSettings(kubeconfig=a.kubeconfig, watch_namespaces=namespaces,
                          watch_secret_namespaces=secret_namespaces, pod_namespace=pod_ns, pod_name=pod_name),
        nginx=NginxSettings(
            binary=a.nginx_binary, conf_dir=a.nginx_conf_dir, run_dir=a.nginx_run_dir,
            reload_timeout_ms=a.nginx_reload_timeout, http_port=a.default_http_listener_port,
            https_port=a.default_https_listener_port, health_status=a.health_status,
            health_status_uri=uri, status=a.nginx_status, status_port=a.nginx_status_port,
            status_allow_cidrs=a.nginx_status_allow_cidrs, main_template_path=a.main_template_path,
            ingress_template_path=a.ingress_template_path,
            transportserver_template_path=a.transportserver_template_path,
            virtualserver_template_path=a.virtualserver_template_path, debug=a.nginx_debug,
            disable_ipv6=a.disable_ipv6,
            default_server_access_log_off=a.default_server_access_log_off,
            dynamic_upstreams=a.enable_dynamic_upstreams,
            dynamic_routes=a.enable_dynamic_routes,
            certificate_cache=a.enable_certificate_cache,
        ),
        controller=ControllerSettings(
            ingress_class=a.ingress_class, nginx_configmaps=a.nginx_configmaps,
            default_server_tls_secret=a.default_server_tls_secret, wildcard_tls_secret=a.wildcard_tls_secret,
            report_ingress_status=a.report_ingress_status, external_service=a.external_service,
            enable_snippets=a.enable_snippets, legacy_startup=a.legacy_startup,
            startup_render_processes=a.startup_render_processes,
            global_configuration=a.global_configuration,
            enable_tls_passthrough=a.enable_tls_passthrough, tls_passthrough_port=a.tls_passthrough_port,
            enable_custom_resources=a.enable_custom_resources,
            enable_directive_autoadjust=a.enable_directive_autoadjust,
            allow_empty_ingress_host=a.allow_empty_ingress_host,
            ingress_nginx_compat=a.ingress_nginx_compat,
            load_certificates_per_handshake=a.load_certificates_per_handshake,
        ),
        leader_election=LeaderElectionSettings(enabled=a.enable_leader_election,
                                               lock_name=a.leader_election_lock_name,
                                               lease_duration_s=float(lease), renew_deadline_s=renew,
                                               retry_period_s=retry),
        serving=ServingSettings(
            ready_status=a.ready_status, ready_status_port=a.ready_status_port,
            enable_prometheus_metrics=a.enable_prometheus_metrics,
            prometheus_metrics_listen_port=a.prometheus_metrics_listen_port, enable_latency_metrics=latency,
        ),
        admission_webhook=webhook,
        log=LogSettings(format=a.log_format, level=a.log_level, include_year=a.include_year),
    )


def _admission_webhook(parser: argparse.ArgumentParser, a: argparse.Namespace) -> AdmissionWebhookSettings:
    """The webhook's settings: TLS from both files or from a Secret, never from both, never from neither."""
    cert, key, secret = (a.admission_webhook_tls_cert_file, a.admission_webhook_tls_key_file,
                         a.admission_webhook_tls_secret)
    if bool(cert) != bool(key):
        parser.error("--admission-webhook-tls-cert-file and --admission-webhook-tls-key-file go together")
    if cert and secret:
        parser.error("give either --admission-webhook-tls-secret or the certificate and key files, not both")
    if a.enable_admission_webhook and not (cert or secret):
        parser.error("--enable-admission-webhook needs --admission-webhook-tls-cert-file and "
                     "--admission-webhook-tls-key-file, or --admission-webhook-tls-secret")
    used: dict[int, str] = {}
    if a.ready_status:
        used[a.ready_status_port] = "--ready-status-port"
    if a.enable_prometheus_metrics:
        used[a.prometheus_metrics_listen_port] = "--prometheus-metrics-listen-port"
    if a.enable_admission_webhook and a.admission_webhook_port in used:
        parser.error(f"--admission-webhook-port {a.admission_webhook_port} is also "
                     f"{used[a.admission_webhook_port]}")
    return AdmissionWebhookSettings(enabled=a.enable_admission_webhook, port=a.admission_webhook_port,
                                    tls_cert_file=cert, tls_key_file=key, tls_secret=secret)


def _namespaces(parser: argparse.ArgumentParser, value: str, flag: str) -> tuple[str, ...]:
    namespaces = tuple(ns.strip() for ns in value.split(",") if ns.strip())
    for ns in namespaces:
        if not _DNS1123_LABEL.match(ns):
            parser.error(f"invalid namespace {ns!r} in {flag}: must be a DNS-1123 label")
    return namespaces


def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags, configure logging, and run the controller until it is told to stop; or, with the
    `migrate-report` subcommand first, run that report (ingressctl/migrate_report) and return its status."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["migrate-report"]:
        from ingressctl.migrate_report import main as migrate_report

        return migrate_report(args[1:])
    settings = parse_args(args)
    from ingressctl.logging import configure_logging

    configure_logging(settings.log)
    from ingressctl.app.root import run

    return run(settings)
