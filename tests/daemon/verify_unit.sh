#!/bin/sh
# usage: verify_unit.sh UNIT FSAUDITD_BINARY
# Verifies the shipped unit with ExecStart pointed at the built binary (verify checks it exists).
set -eu
unit=$1 bin=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s#/usr/sbin/fsauditd#$bin#g" "$unit" > "$dir/fsauditd.service"
. "$(dirname "$0")/../support/repo_manpath.sh"
repo_manpath "$dir"
out=$(systemd-analyze verify "$dir/fsauditd.service" 2>&1) || { echo "$out"; exit 1; }
if [ -n "$out" ]; then
  echo "systemd-analyze verify reported:"; echo "$out"; exit 1
fi
echo "fsauditd.service: verified"
