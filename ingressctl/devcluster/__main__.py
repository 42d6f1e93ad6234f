"""`python -m ingressctl.devcluster`: serve the in-memory API server until SIGINT/SIGTERM, then exit 0.

Prints one line to stdout once serving: the URL first, then where the kubeconfig was written. Logs go to
stderr.
Bad flags or unreadable manifests exit 2 before anything is served.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from ingressctl.devcluster.cluster import DevCluster
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.manifests import ManifestError, read_manifests
from ingressctl.logging import configure_logging
from ingressctl.settings import LogSettings


def _non_negative(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{n} must be >= 0")
    return n


def _port(value: str) -> int:
    n = _non_negative(value)
    if n > 65535:
        raise argparse.ArgumentTypeError(f"port {n} is outside 0-65535")
    return n


def _seconds(value: str) -> float:
    try:
        n = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {value!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"{n} must be > 0")
    return n


def _webhook_service(value: str) -> tuple[str, str]:
    service, eq, address = value.partition("=")
    host, colon, port = address.rpartition(":")
    if not eq or service.count("/") != 1 or not colon or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"invalid value {value!r}: expected NAMESPACE/NAME[:PORT]=HOST:PORT")
    return service, address


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ingressctl.devcluster",
                                description="An in-memory Kubernetes API server for development and tests.")
    p.add_argument("--port", type=_port, default=0, help="port to listen on (0 picks a free port)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--kubeconfig-out", required=True, metavar="PATH", help="where to write the kubeconfig")
    p.add_argument("--manifests", nargs="+", action="extend", default=[], metavar="PATH",
                   help="YAML/JSON files or directories to load at start (sorted file order)")
    p.add_argument("--tls", action="store_true",
                   help="serve HTTPS with a generated certificate and bearer token")
    p.add_argument("--latency-ms", type=_non_negative, default=0, help="added latency for every request")
    p.add_argument("--history", type=_non_negative, default=10000,
                   help="watch events kept; older resourceVersions get 410 Expired")
    p.add_argument("--bookmark-interval", type=_seconds, default=2.0, metavar="SECONDS",
                   help="seconds between watch bookmarks (default 2)")
    p.add_argument("--authorization-mode", default="AlwaysAllow", choices=("AlwaysAllow", "RBAC"),
                   help="RBAC: authorize every identity but the kubeconfig's admin token against the stored "
                        "Roles and bindings; implies --tls (default AlwaysAllow)")
    p.add_argument("--webhook-service", action="append", default=[], type=_webhook_service,
                   metavar="NAMESPACE/NAME[:PORT]=HOST:PORT",
                   help="route an admission webhook's clientConfig.service to HOST:PORT (repeatable)")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(LogSettings(format="text", level=args.log_level))
    try:
        objects = read_manifests(args.manifests)
    except ManifestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    cluster = DevCluster(host=args.host, port=args.port, tls=args.tls, latency_ms=args.latency_ms,
                         history=args.history, bookmark_interval=args.bookmark_interval,
                         authorization_mode=args.authorization_mode,
                         webhook_services=dict(args.webhook_service))
    try:
        cluster.load(objects)
    except (ValueError, StatusError) as e:
        print(f"error: cannot load manifests: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        cluster.start()
    except OSError as e:
        print(f"error: cannot listen on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1
    try:
        cluster.write_kubeconfig(args.kubeconfig_out)
        print(f"{cluster.url} kubeconfig={args.kubeconfig_out}", flush=True)
        while not stop.wait(3600):
            pass
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
