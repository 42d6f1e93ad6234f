#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, when they are missing: nginx and kubectl.
# Idempotent; runs apt-get update at most once per call and only when something is missing.
set -euo pipefail

missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)
for extra in "$@"; do
  case "$extra" in
    go) command -v go >/dev/null 2>&1 || missing+=(golang-go golang-github-masterminds-sprig-dev) ;;
  esac
done

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "missing system packages: ${missing[*]}; install them (as root: apt-get install ${missing[*]})" >&2
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
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
