#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, when they are missing: nginx, its stream module
# (TransportServers), kubectl, and npm (which scripts/install-helm.sh uses to fetch Helm); then builds and
# installs ingressctl's NGINX modules (nginx-module/: endpoint changes without reloads, faster loads of many
# upstreams) with nginx-dev, gcc and make (scripts/build-nginx-module.sh).
#   scripts/install-system-deps.sh        nginx, libnginx-mod-stream, kubectl, npm, nginx-dev, gcc, make
# Idempotent: installs only what is missing; runs apt-get update at most once, and only when installing from
# the current package lists fails; rebuilds the modules only when a source or NGINX changed.
set -euo pipefail

missing=()
need() { # need <package>: add it once
  local p
  for p in "${missing[@]+"${missing[@]}"}"; do [ "$p" = "$1" ] && return 0; done
  missing+=("$1")
}

command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need nginx
# The stream module: Debian builds it as a dynamic module in its own package.
[ -e /usr/lib/nginx/modules/ngx_stream_module.so ] || need libnginx-mod-stream
command -v kubectl >/dev/null 2>&1 || need kubernetes-client
command -v npm >/dev/null 2>&1 || need npm
# What the dynamic-peers module is built with: NGINX's configure script and headers, a compiler, make.
[ -x /usr/share/nginx/src/configure ] || need nginx-dev
command -v cc >/dev/null 2>&1 || need gcc
command -v make >/dev/null 2>&1 || need make
if [ $# -gt 0 ]; then
  echo "install-system-deps: no arguments expected (got: $*)" >&2
  exit 2
fi

build_module() {
  local build
  build="$(dirname "$0")/build-nginx-module.sh"
  bash "$build" --check && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "ingressctl's NGINX modules are missing or out of date; build them as root: $build" >&2
    return 0
  fi
  bash "$build"
}

if [ ${#missing[@]} -eq 0 ]; then
  build_module
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "missing system packages: ${missing[*]}; install them (as root: apt-get install ${missing[*]})" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "missing system packages: ${missing[*]}; this script installs them with apt-get (Debian/Ubuntu only)" >&2
  exit 1
fi
echo "installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Keep package scripts from starting the distribution's nginx service: the tests run their own NGINX.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && created_policy=1
fi
trap '[ "$created_policy" = 1 ] && rm -f "$policy"' EXIT
# Install straight away when the package lists already know every package; refresh them only otherwise.
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
build_module
