#!/usr/bin/env bash
# Builds the chart renderer (main.go next to this script) offline, against the Go libraries Debian installs
# (scripts/install-system-deps.sh go): GOPATH mode, no module downloads.
#   tests/chart/render/build.sh OUTPUT_BINARY
# GOCODE overrides where the Go library sources live (default: Debian's GOPATH); GOCACHE is honoured and
# defaults to a per-user directory under the system temp dir.
set -euo pipefail
out=${1:?usage: build.sh OUTPUT_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
gocode=${GOCODE:-/usr/share/gocode}
if ! command -v go >/dev/null 2>&1; then
  echo "go is not installed: run scripts/install-system-deps.sh go (as root)" >&2
  exit 1
fi
for lib in github.com/Masterminds/sprig sigs.k8s.io/yaml github.com/xeipuuv/gojsonschema; do
  if [ ! -d "$gocode/src/$lib" ]; then
    echo "Go library $lib is missing under $gocode/src: run scripts/install-system-deps.sh go (as root)" >&2
    exit 1
  fi
done
cache=${GOCACHE:-${TMPDIR:-/tmp}/ingressctl-gocache-$(id -u)}
mkdir -p "$cache" "$(dirname "$out")"
cd "$here"
GO111MODULE=off GOPATH="$gocode" GOCACHE="$cache" GOFLAGS= CGO_ENABLED=0 GOPROXY=off \
  go build -o "$out" .
