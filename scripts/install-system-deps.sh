#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, when they are missing: nginx, its stream module
# (TransportServers) and kubectl.
#   scripts/install-system-deps.sh        nginx, libnginx-mod-stream, kubectl
#   scripts/install-system-deps.sh go     also Go and the Go libraries the chart renderer (tests/chart/render)
#                                         builds against offline: sprig, sigs.k8s.io/yaml and gojsonschema
#                                         (Helm's own template, YAML and values-schema libraries) from Debian
# Idempotent: installs only what is missing; runs apt-get update at most once, and only when installing from
# the current package lists fails.
set -euo pipefail

# Debian installs Go library sources here (GOPATH layout).
GOCODE_SRC=/usr/share/gocode/src

missing=()
need() { # need <package>: add it once
  local p
  for p in "${missing[@]+"${missing[@]}"}"; do [ "$p" = "$1" ] && return 0; done
  missing+=("$1")
}
have_go_lib() { [ -d "$GOCODE_SRC/$1" ] && [ -n "$(ls -A "$GOCODE_SRC/$1" 2>/dev/null)" ]; }

command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need nginx
# The stream module: Debian builds it as a dynamic module in its own package.
[ -e /usr/lib/nginx/modules/ngx_stream_module.so ] || need libnginx-mod-stream
command -v kubectl >/dev/null 2>&1 || need kubernetes-client
for extra in "$@"; do
  case "$extra" in
    go)
      command -v go >/dev/null 2>&1 || need golang-go
      have_go_lib github.com/Masterminds/sprig || need golang-github-masterminds-sprig-dev
      have_go_lib sigs.k8s.io/yaml || need golang-k8s-sigs-yaml-dev
      have_go_lib github.com/xeipuuv/gojsonschema || need golang-github-xeipuuv-gojsonschema-dev
      ;;
    *)
      echo "install-system-deps: unknown component '$extra' (known: go)" >&2
      exit 2
      ;;
  esac
done

[ ${#missing[@]} -eq 0 ] && exit 0

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
