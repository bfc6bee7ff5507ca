#!/bin/sh
# usage: verify_unit.sh UNIT FSAUDITD_BINARY
# Verifies the shipped unit with ExecStart pointed at the built binary (verify checks it exists).
set -eu
unit=$1 bin=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s#/usr/sbin/fsauditd#$bin#g" "$unit" > "$dir/fsauditd.service"
# Documentation=man:X(N) is checked by running man: point it at the repository's pages, so a unit
# that names a page the package does not ship fails here.
for page in "$(dirname "$0")"/../../man/*.[1-8]; do
  sec=${page##*.}
  mkdir -p "$dir/man/man$sec"
  ln -s "$(cd "$(dirname "$page")" && pwd)/$(basename "$page")" "$dir/man/man$sec/"
done
export MANPATH="$dir/man"
out=$(systemd-analyze verify "$dir/fsauditd.service" 2>&1) || { echo "$out"; exit 1; }
if [ -n "$out" ]; then
  echo "systemd-analyze verify reported:"; echo "$out"; exit 1
fi
echo "fsauditd.service: verified"
