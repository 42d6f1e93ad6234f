"""What the running NGINX can load: its version and its modules, read once from `nginx -V` at start-up.

Guarantees:
- `Capabilities` is a frozen value the renderers receive through their static parameters. `missing(feature)`
  returns "" when this NGINX can load what the feature renders, otherwise what it needs (an NGINX version or
  a module); `not_applied(what, feature)` turns that into the warning for the resource. Renderers leave such
  a directive out rather than emit a config NGINX refuses.
- `Capabilities()` (nothing read) knows no version, so every directive newer than NGINX 1.22 is left out; it
  assumes the modules the project has always assumed (those of Debian's NGINX), and no otel module.
- `from_build_info(text, modules_present)` is a pure parse of `nginx -V`: the version from `nginx/<x.y.z>`,
  built-in modules from the `--with-*` configure arguments (and `--add-module`), dynamic modules only when
  their `.so` file is present in the modules directory (they are then loaded with `load_module`).
- `detect(binary)` runs `nginx -V`; a binary that cannot be run raises `CapabilitiesError`.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

_DEFAULT_MODULES_PATH = "/usr/lib/nginx/modules"

# Directives that exist only from some NGINX version on: feature -> (first version, the directive).
MIN_VERSIONS: dict[str, tuple[tuple[int, ...], str]] = {
    "add_header_inherit": ((1, 29, 3), "add_header_inherit"),
    "sticky_cookie": ((1, 29, 6), "sticky cookie"),
    "http2_directive": ((1, 25, 1), "http2 on"),
    "stream_server_name": ((1, 25, 5), "stream server_name"),
    # certificates and keys loaded through variables (at handshakes), cached
    "ssl_certificate_cache": ((1, 27, 4), "ssl_certificate_cache"),
}

# Modules: feature -> (NGINX module name, built-in configure flag, dynamic module file or "", directive).
MODULES: dict[str, tuple[str, str, str, str]] = {
    "stub_status": ("ngx_http_stub_status_module", "--with-http_stub_status_module", "", "stub_status"),
    "gunzip": ("ngx_http_gunzip_module", "--with-http_gunzip_module", "", "gunzip"),
    "sub_filter": ("ngx_http_sub_module", "--with-http_sub_module", "", "sub_filter"),
    "slice": ("ngx_http_slice_module", "--with-http_slice_module", "", "slice"),
    "auth_request": ("ngx_http_auth_request_module", "--with-http_auth_request_module", "", "auth_request"),
    "http2": ("ngx_http_v2_module", "--with-http_v2_module", "", "http2"),
    "realip": ("ngx_http_realip_module", "--with-http_realip_module", "", "real_ip_header"),
    "njs": ("ngx_http_js_module", "", "ngx_http_js_module.so", "js_*"),
    "otel": ("ngx_otel_module", "", "ngx_otel_module.so", "otel_*"),
}

# What `Capabilities()` assumes when nothing was read: Debian's NGINX 1.22 build.
ASSUMED_MODULES = frozenset({"stub_status", "gunzip", "sub_filter", "slice", "auth_request", "http2",
                             "realip"})


class CapabilitiesError(Exception):
    pass


def parse_version(text: str) -> tuple[int, ...]:
    """`1.22.1` -> (1, 22, 1); () for anything else."""
    m = re.fullmatch(r"(\d{1,4})\.(\d{1,4})\.(\d{1,4})", text.strip())
    return tuple(int(g) for g in m.groups()) if m else ()


def version_text(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


@dataclass(frozen=True)
class Capabilities:
    """The running NGINX's version and modules (see the module docstring)."""

    version: tuple[int, ...] = ()
    modules: frozenset[str] = ASSUMED_MODULES
    # feature -> the `.so` to `load_module` (dynamic modules found in the modules directory)
    load_modules: tuple[tuple[str, str], ...] = ()

    def has(self, feature: str) -> bool:
        return not self.missing(feature)

    def missing(self, feature: str) -> str:
        """"" when this NGINX has the feature, else what it needs, e.g. "the open-source `sticky cookie`
        directive needs NGINX 1.29.6 or newer, and this NGINX is 1.22.1"."""
        if feature in MIN_VERSIONS:
            need, directive = MIN_VERSIONS[feature]
            if self.version and self.version >= need:
                return ""
            running = version_text(self.version) if self.version else "of an unknown version"
            return (f"the open-source `{directive}` directive needs NGINX {version_text(need)} or newer, and "
                    f"this NGINX is {running}")
        if feature in MODULES:
            if feature in self.modules:
                return ""
            return f"it needs NGINX's {MODULES[feature][0]}, which this NGINX does not have"
        raise KeyError(f"unknown NGINX feature {feature!r}")

    def not_applied(self, what: str, feature: str) -> str:
        """The warning for a resource that uses `feature` on an NGINX without it ("" when it has it):
        "<what> is accepted but not applied: <what it needs>; the <directive> directive is left out"."""
        reason = self.missing(feature)
        if not reason:
            return ""
        directive = (MIN_VERSIONS[feature][1] if feature in MIN_VERSIONS else MODULES[feature][3]).split()[0]
        return f"{what} is accepted but not applied: {reason}; the {directive} directive is left out"

    def features(self) -> frozenset[str]:
        """Every feature name (of `MIN_VERSIONS` and `MODULES`) this NGINX has, e.g. for a renderer that
        takes a plain set."""
        return frozenset(f for f in (*MIN_VERSIONS, *MODULES) if self.has(f))

    def load_module(self, feature: str) -> str:
        """The `load_module` path of a dynamic module this NGINX has ("" when built in or absent)."""
        return dict(self.load_modules).get(feature, "")

    def describe(self) -> str:
        """One line for the start-up log."""
        return (f"nginx {version_text(self.version) if self.version else '(unknown version)'}; modules: "
                + ", ".join(sorted(self.modules)))


UNKNOWN_NGINX = Capabilities()
"""Nothing read (see the module docstring)."""


def from_build_info(text: str, modules_present: Callable[[str], bool] = os.path.isfile) -> Capabilities:
    """Parse `nginx -V` output; `modules_present(path)` says whether a dynamic module file exists."""
    m = re.search(r"nginx/(\S+)", text)
    version = parse_version(m.group(1)) if m else ()
    args_line = next((ln for ln in text.splitlines() if ln.startswith("configure arguments:")), "")
    args = args_line.removeprefix("configure arguments:").split()
    mp = next((a.split("=", 1)[1] for a in args if a.startswith("--modules-path=")), _DEFAULT_MODULES_PATH)
    added = " ".join(a for a in args if a.startswith("--add-module="))
    modules: set[str] = set()
    loads: list[tuple[str, str]] = []
    for feature, (_, flag, so, _d) in MODULES.items():
        if (flag and flag in args) or (so and feature in added):  # built in (njs, otel: --add-module=)
            modules.add(feature)
        elif so and modules_present(os.path.join(mp, so)):
            modules.add(feature)
            loads.append((feature, os.path.join(mp, so)))
    return Capabilities(version=version, modules=frozenset(modules), load_modules=tuple(loads))


def detect(binary: str, timeout: float = 30.0) -> Capabilities:
    """Run `<binary> -V` and parse it (see `from_build_info`)."""
    try:
        res = subprocess.run([binary, "-V"], capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout,
                             check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CapabilitiesError(f"cannot run {binary} -V: {e}") from e
    text = (res.stderr + res.stdout).decode(errors="replace")
    if "nginx/" not in text:
        raise CapabilitiesError(f"unexpected `{binary} -V` output: {text.strip()[:300]!r}")
    return from_build_info(text)
