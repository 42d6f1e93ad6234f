#!/usr/bin/env bash
# Builds ingressctl's NGINX modules against the headers of the installed NGINX and installs them into NGINX's
# modules directory:
#   nginx-module/dynamic_peers      endpoint changes reach NGINX without a reload
#   nginx-module/certificate_cache  certificates named by variables parsed once per worker, not per handshake
# Needs Debian's nginx-dev package (NGINX's configure script and headers, same version as nginx) and a C
# compiler; scripts/install-system-deps.sh installs both. NGINX's configure builds them with -Werror.
#   scripts/build-nginx-module.sh [--modules-dir DIR] [--check]
# Idempotent: rebuilds only when a module's source or the NGINX version changed (a stamp next to each module).
# --check: build nothing; exit 0 when every installed module is current, 1 otherwise.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# module directory -> module name
modules=(dynamic_peers:ngx_http_ingressctl_dynamic_peers_module
         certificate_cache:ngx_http_ingressctl_certificate_cache_module)
nginx_src=/usr/share/nginx/src

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

nginx_version="$(sed -n 's|^nginx version: nginx/\([0-9.]*\).*|\1|p' <<<"$version_output")"
want() {  # the stamp a module built from its current source for this NGINX carries
  echo "$nginx_version $(cat "$here/nginx-module/$1"/*.[ch] "$here/nginx-module/$1/config" | sha256sum | cut -c1-16)"
}
current=1
for m in "${modules[@]}"; do
  dir="${m%%:*}" name="${m#*:}"
  if [ ! -f "$modules_dir/$name.so" ] || [ "$(cat "$modules_dir/$name.stamp" 2>/dev/null)" != "$(want "$dir")" ]
  then
    current=0
  fi
done
[ "$current" = 1 ] && exit 0
[ "$check" = 1 ] && exit 1

if [ ! -x "$nginx_src/configure" ] || [ ! -f "$nginx_src/conf_flags" ]; then
  echo "build-nginx-module: NGINX's sources for modules are missing ($nginx_src); install nginx-dev" >&2
  exit 1
fi
# The module must be built for exactly the running NGINX: Debian's nginx-dev carries its version.
dev_version="$(sed -n 's/^#define NGINX_VERSION *"\(.*\)"/\1/p' "$nginx_src/src/core/nginx.h")"
if [ "$nginx_version" != "$dev_version" ]; then
  echo "build-nginx-module: nginx is $nginx_version but nginx-dev is $dev_version" >&2
  exit 1
fi

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
cp -a "$nginx_src/." "$build/"
# shellcheck disable=SC1091
. "$build/conf_flags"  # NGX_CONF_FLAGS: Debian's configure flags (with --with-compat)
(
  cd "$build"
  add=()
  for m in "${modules[@]}"; do add+=(--add-dynamic-module="$here/nginx-module/${m%%:*}"); done
  ./configure "${NGX_CONF_FLAGS[@]}" "${add[@]}" >configure.log 2>&1 \
    || { tail -20 configure.log >&2; exit 1; }
  make -j"$(nproc)" -f objs/Makefile modules >make.log 2>&1 || { tail -20 make.log >&2; exit 1; }
)
install -d "$modules_dir"
for m in "${modules[@]}"; do
  dir="${m%%:*}" name="${m#*:}"
  install -m 0644 "$build/objs/$name.so" "$modules_dir/$name.so"
  want "$dir" >"$modules_dir/$name.stamp"
  echo "installed $modules_dir/$name.so"
done
