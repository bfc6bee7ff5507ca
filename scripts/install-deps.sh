#!/bin/sh
# Installs every Debian 12 package fsaudit needs to build, test and run its lab. Idempotent: a machine
# that has them all is left alone (no apt-get update).
set -eu
PKGS="build-essential cmake pkg-config g++ git
  prometheus-cpp-dev libyaml-cpp-dev libspdlog-dev libsystemd-dev liburing-dev liblz4-dev libjemalloc-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  util-linux e2fsprogs xfsprogs btrfs-progs zfs-fuse fio libfuse3-dev fuse3 smartmontools
  prometheus systemd dbus curl jq procps psmisc kmod python3 ccache
  libssl-dev libcrypt-dev openssl chromium lintian
  clang libclang-rt-14-dev lld prometheus-node-exporter"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing
  # zfs-fuse's package starts its daemon where an init system runs; fsaudit's lab and tests start
  # their own, so a packaged one is stopped here to leave one owner.
  if pgrep -x zfs-fuse >/dev/null 2>&1 && [ -x /etc/init.d/zfs-fuse ]; then /etc/init.d/zfs-fuse stop || true; fi
fi
