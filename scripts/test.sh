#!/bin/sh
# Installs what is needed, builds, and runs every test (unit, integration and lab tests).
# Lab tests need root (loop devices, mounts, zfs-fuse); elsewhere they skip with their reason, unless
# FSAUDIT_REQUIRE_LAB=1 (as in CI), which makes a skip a failure.
# FSAUDIT_SANITIZE=1 builds and runs the suite under AddressSanitizer + UndefinedBehaviorSanitizer.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
if [ "${FSAUDIT_SANITIZE:-0}" = 1 ]; then
  dir=build-asan
  sh scripts/build.sh "$dir" -DFSAUDIT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
  dir=build
  sh scripts/build.sh "$dir"
fi
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" ${FSAUDIT_CTEST_ARGS:-}
