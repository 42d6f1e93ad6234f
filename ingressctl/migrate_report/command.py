"""The command line of `ingressctl migrate-report` (see the package docstring).

Guarantees:
- `--kubeconfig PATH` or `--from-files DIR`, exactly one; `--namespace`, `--ingress-class`,
  `--enable-snippets` and `--allow-empty-ingress-host` are the controller's flags of the same names (the
  verdicts depend on them); `--output text|json`.
- Usage errors exit 2 with argparse's message; unreadable input exits 2 with one line naming it on stderr;
  otherwise the report goes to stdout and the exit status is 0. Nothing else is written to stdout, and the
  client's own log lines (meant for the controller) are off: the one error line says what failed.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any

from ingressctl.flag_values import bool_flag
from ingressctl.migrate_report.analysis import Options, analyse
from ingressctl.migrate_report.output import to_json, to_text
from ingressctl.migrate_report.sources import Inputs, SourceError, read_cluster, read_files

PROG = "ingressctl migrate-report"
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def _flag(p: argparse.ArgumentParser, name: str, help_text: str) -> None:
    p.add_argument(name, nargs="?", const=True, default=False, type=bool_flag, metavar="BOOL",
                   help=f"{help_text} (default false)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Report what ingressctl --ingress-nginx-compat would make of the Ingresses written for "
                    "ingress-nginx: which are served, rejected (and why) or not served, and the status of "
                    "each nginx.ingress.kubernetes.io/* annotation. Reads only; exit status 0 whatever the "
                    "verdicts, 2 for usage errors and unreadable input.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--kubeconfig", metavar="PATH",
                     help="read every Ingress and IngressClass of this cluster")
    src.add_argument("--from-files", metavar="DIR",
                     help="read the *.yaml, *.yml and *.json manifests under DIR (recursively)")
    p.add_argument("--namespace", "-n", help="only the Ingresses of this namespace (default: all)")
    p.add_argument("--ingress-class", default="nginx",
                   help="the controller's --ingress-class, its primary class (default nginx)")
    _flag(p, "--enable-snippets", "as the controller's flag: without it snippet annotations are refused")
    _flag(p, "--allow-empty-ingress-host", "as the controller's flag: without it a rule without a host "
          "rejects the Ingress")
    p.add_argument("--output", "-o", choices=("text", "json"), default="text", help="(default text)")
    return p


def _read(a: argparse.Namespace) -> tuple[Inputs, str, dict[str, Any]]:
    if a.from_files is not None:
        return read_files(a.from_files), a.from_files, {"from": "files", "path": a.from_files,
                                                       "namespace": a.namespace}
    from ingressctl.k8s.client import KubeClient, KubeConfigError

    try:
        client = KubeClient.from_kubeconfig(a.kubeconfig)
    except KubeConfigError as e:
        raise SourceError(str(e)) from e
    try:
        inputs = read_cluster(client, a.namespace)
    finally:
        client.close()
    where = f"the cluster at {client.host}" + (f", namespace {a.namespace}" if a.namespace else "")
    return inputs, where, {"from": "cluster", "server": client.host, "namespace": a.namespace}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the report; the exit status (see the module docstring)."""
    parser = build_parser()
    a = parser.parse_args(sys.argv[2:] if argv is None else argv)
    if a.namespace is not None and not _DNS1123_LABEL.match(a.namespace):
        parser.error(f"invalid --namespace {a.namespace!r}: must be a DNS-1123 label")
    if not a.ingress_class.strip():
        parser.error("--ingress-class must not be empty")
    from ingressctl.logging import configure_logging
    from ingressctl.settings import LogSettings

    configure_logging(LogSettings(level="fatal"))  # the report says what failed; stdout is its alone
    try:
        inputs, where, source = _read(a)
    except SourceError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    options = Options(ingress_class=a.ingress_class, enable_snippets=a.enable_snippets,
                      allow_empty_ingress_host=a.allow_empty_ingress_host)
    report = analyse(inputs, options, a.namespace)
    sys.stdout.write(to_json(report, source) if a.output == "json" else to_text(report, where))
    return 0
