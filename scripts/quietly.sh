#!/usr/bin/env bash
# quietly.sh <what> <command...>: run the command with its output kept aside; print one line saying what is
# being done, and the command's whole output only if it fails (then exit with its status).
set -uo pipefail
what=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "$what"
"$@" >"$log" 2>&1
status=$?
if [ "$status" -ne 0 ]; then
  cat "$log" >&2
  echo "failed ($status): $*" >&2
  exit "$status"
fi
