#!/bin/sh
# usage: unit_exposure.sh SYSTEMD_DIR FSAUDITD_BINARY HELPER_BINARY
# Fails when a shipped unit's `systemd-analyze security --offline=true` exposure goes above its
# limit, or when `systemd-analyze verify` reports anything (binaries pointed at the build).
set -eu
src=$1 fsauditd=$2 helper=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../support/repo_manpath.sh"
repo_manpath "$dir"
fail=0
check() {  # unit-file limit
  unit=$1 limit=$2
  sed -e "s#/usr/sbin/fsauditd#$fsauditd#g" -e "s#/usr/libexec/fsaudit/fsaudit-helper#$helper#g" "$src/$unit" > "$dir/$unit"
  score=$(systemd-analyze security --offline=true "$dir/$unit" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  if [ -z "$score" ]; then
    echo "$unit: systemd-analyze security gave no score"; fail=1; return
  fi
  if awk -v s="$score" -v l="$limit" 'BEGIN { exit !(s > l) }'; then
    echo "$unit: exposure $score is above its limit $limit"; fail=1
  else
    echo "$unit: exposure $score (limit $limit)"
  fi
}
# The default unit (unprivileged, with fsaudit-helper) must stay at 3.0 or below.
check fsauditd.service 3.0
check fsauditd-root.service 6.3
check fsaudit-helper@.service 3.8
cp "$src/fsaudit-helper.socket" "$dir/"
for u in fsauditd.service fsauditd-root.service fsaudit-helper.socket; do
  out=$(cd "$dir" && systemd-analyze verify "$dir/$u" 2>&1 | grep -v -e "fsaudit-helper@" -e "Unknown group" -e "sockets.target" || true)
  if [ -n "$out" ]; then echo "systemd-analyze verify $u:"; echo "$out"; fail=1; else echo "$u: verified"; fi
done
exit $fail
