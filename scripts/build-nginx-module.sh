#!/usr/bin/env bash
# Builds ingressctl's NGINX modules (every directory under nginx-module/, e.g. dynamic_peers: endpoint
# changes without a reload) against the headers of the installed NGINX and installs them into NGINX's
# modules directory, each with a stamp naming the NGINX version it was built for. Needs Debian's nginx-dev
# package (NGINX's configure script and headers, same version as nginx) and a C compiler;
# scripts/install-system-deps.sh installs both.
#   scripts/build-nginx-module.sh [--modules-dir DIR] [--check]
# Idempotent: rebuilds only when a source or the NGINX version changed (the stamps next to the modules).
# --check: build nothing; exit 0 when every installed module is current, 1 otherwise.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
nginx_src=/usr/share/nginx/src
module_dirs=("$here"/nginx-module/*/)
module_dirs=("${module_dirs[@]%/}")
names=()
for dir in "${module_dirs[@]}"; do
  names+=("$(sed -n 's/^ngx_module_name=//p' "$dir/config")")
done

nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
version_output="$("$nginx_bin" -V 2>&1)"
modules_dir="$(sed -n 's/.*--modules-path=\([^ ]*\).*/\1/p' <<<"$version_output")"
modules_dir="${modules_dir:-/usr/lib/nginx/modules}"
if [ "${1:-}" = "--modules-dir" ]; then
  modules_dir="$2"
  shift 2
fi
check=0
if [ "${1:-}" = "--check" ]; then
  check=1
  shift
fi
if [ $# -gt 0 ]; then
  echo "build-nginx-module: unexpected arguments: $*" >&2
  exit 2
fi

want_source="$(for dir in "${module_dirs[@]}"; do cat "$dir"/*.[ch] "$dir/config"; done | sha256sum | cut -c1-16)"
nginx_version="$(sed -n 's|^nginx version: nginx/\([0-9.]*\).*|\1|p' <<<"$version_output")"
want="$nginx_version $want_source"
current=1
for name in "${names[@]}"; do
  if [ ! -f "$modules_dir/$name.so" ] || [ "$(cat "$modules_dir/$name.stamp" 2>/dev/null)" != "$want" ]; then
    current=0
  fi
done
[ "$current" = 1 ] && exit 0
[ "$check" = 1 ] && exit 1

if [ ! -x "$nginx_src/configure" ] || [ ! -f "$nginx_src/conf_flags" ]; then
  echo "build-nginx-module: NGINX's sources for modules are missing ($nginx_src); install nginx-dev" >&2
  exit 1
fi
# The modules must be built for exactly the running NGINX: Debian's nginx-dev carries its version.
dev_version="$(sed -n 's/^#define NGINX_VERSION *"\(.*\)"/\1/p' "$nginx_src/src/core/nginx.h")"
if [ "$nginx_version" != "$dev_version" ]; then
  echo "build-nginx-module: nginx is $nginx_version but nginx-dev is $dev_version" >&2
  exit 1
fi

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
cp -a "$nginx_src/." "$build/"
add=()
for dir in "${module_dirs[@]}"; do
  add+=("--add-dynamic-module=$dir")
done
# shellcheck disable=SC1091
. "$build/conf_flags"  # NGX_CONF_FLAGS: Debian's configure flags (with --with-compat)
(
  cd "$build"
  ./configure "${NGX_CONF_FLAGS[@]}" "${add[@]}" >configure.log 2>&1 \
    || { tail -20 configure.log >&2; exit 1; }
  make -j"$(nproc)" -f objs/Makefile modules >make.log 2>&1 || { tail -20 make.log >&2; exit 1; }
)
install -d "$modules_dir"
for name in "${names[@]}"; do
  install -m 0644 "$build/objs/$name.so" "$modules_dir/$name.so"
  echo "$want" >"$modules_dir/$name.stamp"
  echo "installed $modules_dir/$name.so"
done
