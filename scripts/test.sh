#!/bin/sh
# Installs what is needed, builds, and runs every test (unit, integration and lab tests).
# Lab tests need root (loop devices, mounts, zfs-fuse); elsewhere they skip with their reason, unless
# FSAUDIT_REQUIRE_LAB=1 (as in CI), which makes a skip a failure.
# FSAUDIT_SANITIZE=1 builds and runs the suite under AddressSanitizer + UndefinedBehaviorSanitizer.
# FSAUDIT_CORPUS_DIR=DIR also builds and runs the conformance suite against that corpus.
# FSAUDIT_CTEST_ARGS adds ctest arguments (e.g. "-L lab", "-R Scrub").
# FSAUDIT_BUILD_ONLY=1 stops after the build (CI builds first, then starts other work beside the tests).
# The ASan+UBSan suite leaves out the tests listed in tests/release-only.txt (with the reason for each:
# no fsaudit code runs in them, or their time is fixed waits); FSAUDIT_SANITIZE_ALL=1 runs them too.
set -eu
if [ -n "${FSAUDIT_CORPUS_DIR:-}" ]; then
  FSAUDIT_CORPUS_DIR=$(cd "$FSAUDIT_CORPUS_DIR" && pwd)
  export FSAUDIT_CORPUS_DIR
fi
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
if [ "${FSAUDIT_SANITIZE:-0}" = 1 ]; then
  dir=build-asan
  # clang builds it in half the time g++ takes (ASan at -O0), and a second compiler's warnings
  # (-Werror) are checked on every file; the release build stays with Debian's default, g++.
  sh scripts/build.sh "$dir" -DFSAUDIT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
  dir=build
  sh scripts/build.sh "$dir"
fi
[ "${FSAUDIT_BUILD_ONLY:-0}" = 1 ] && exit 0
log="$dir/ctest.log"
rm -f "$dir/ctest.rc"
exclude=""
if [ "${FSAUDIT_SANITIZE:-0}" = 1 ] && [ "${FSAUDIT_SANITIZE_ALL:-0}" != 1 ]; then
  exclude=$(grep -v '^#' tests/release-only.txt | awk 'NF { printf "%s%s", sep, $1; sep = "|" }')
  echo "== ASan+UBSan suite: leaving out the release-only tests (tests/release-only.txt): $exclude"
fi
# shellcheck disable=SC2086
{ ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" ${exclude:+-E "$exclude"} ${FSAUDIT_CTEST_ARGS:-}; echo $? >"$dir/ctest.rc"; } 2>&1 | tee "$log"
rc=$(cat "$dir/ctest.rc" 2>/dev/null || echo 1)
# The summary again, last, where a reader of a long CI log looks.
echo "== ctest ($dir): $(grep -E '^[0-9]+% tests passed' "$log" || echo "no summary line (ctest exit $rc)")"
skipped=$(grep -c '(Skipped)$' "$log" || true)
echo "== skipped: $skipped (full list above under 'The following tests did not run')"
if [ "${FSAUDIT_REQUIRE_LAB:-0}" = 1 ] && [ "$skipped" != 0 ]; then
  echo "== FSAUDIT_REQUIRE_LAB=1: no test may skip" >&2
  [ "$rc" = 0 ] && rc=1
fi
exit "$rc"
