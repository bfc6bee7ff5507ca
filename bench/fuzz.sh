#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang + sanitizers (ASan+UBSan unless --sanitizers) and
# runs each one, seeded from the fixtures in the repository. Prints one line per target: executions,
# exec/s, coverage, corpus, seconds, sanitizers, result.
# A crash leaves its input under <build>/artifacts/<target>/ and makes the script exit 1.
#
# usage: bench/fuzz.sh [--runs N] [--ci] [--prebuilt] [--seconds S] [--only "target ..."] [--build DIR] [--jobs J]
#                      [--parallel P] [--nice N] [--sanitizers LIST] [--max-len N]
#   --runs N     executions per target (default 10000000)
#   --ci         30 seconds per target instead of a run count, two targets at a time (what CI runs:
#                18 targets in about 5 minutes)
#   --prebuilt   the targets are already built in --build DIR (clang's ASan+UBSan build builds them:
#                scripts/test.sh with FSAUDIT_SANITIZE=1, build-asan/); nothing is configured or built
#   --seconds S  at most S seconds per target (with or without --runs)
#   --only LIST  run only these targets (names as in fuzz/CMakeLists.txt)
#   --jobs J     build jobs (default 2)
#   --parallel P fuzz P targets at the same time (default 1; each is one process on one core)
#   --nice N     run the fuzzers under nice -n N (default 0)
#   --sanitizers LIST  clang -fsanitize list (default address,undefined, what CI runs); "undefined"
#                alone is the volume mode (no ASan: several times the exec/s), built in <build>-ubsan
#   --max-len N  longest input libFuzzer generates (default 8192: every parser is line-based, longer
#                inputs only repeat lines; long inputs are covered by the unit tests)
# env: CC/CXX default to clang/clang++; FUZZ_BUILD (default build-fuzz).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
RUNS=10000000
SECONDS_EACH=0
ONLY=""
BUILD=${FUZZ_BUILD:-$HERE/build-fuzz}
JOBS=2
PARALLEL=1
NICE=0
SANITIZERS=address,undefined
MAX_LEN=8192
BUILD_SET=0
PREBUILT=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2;;
    --ci) RUNS=0; SECONDS_EACH=30; PARALLEL=2; shift;;
    --prebuilt) PREBUILT=1; shift;;
    --seconds) SECONDS_EACH=$2; shift 2;;
    --only) ONLY=$2; shift 2;;
    --build) BUILD=$2; BUILD_SET=1; shift 2;;
    --jobs) JOBS=$2; shift 2;;
    --parallel) PARALLEL=$2; shift 2;;
    --nice) NICE=$2; shift 2;;
    --sanitizers) SANITIZERS=$2; shift 2;;
    --max-len) MAX_LEN=$2; shift 2;;
    -h|--help) sed -n 2,23p "$0"; exit 0;;
    *) echo "unknown argument: $1" >&2; exit 2;;
  esac
done
# Another sanitizer set is another build (every library is instrumented).
if [ "$SANITIZERS" != address,undefined ] && [ "$BUILD_SET" = 0 ] && [ -z "${FUZZ_BUILD:-}" ]; then
  BUILD=$BUILD-$(echo "$SANITIZERS" | tr ',' '-')
fi
command -v clang++ >/dev/null || { echo "clang++ not installed (scripts/install-deps.sh installs clang)" >&2; exit 2; }

TARGETS="fuzz_zpool_status_text fuzz_zpool_status_json fuzz_zpool_list fuzz_btrfs_scrub_status
  fuzz_btrfs_device_stats fuzz_btrfs_sysfs fuzz_bcachefs fuzz_md fuzz_xfs_spaceman fuzz_ext4_sysfs
  fuzz_mountinfo fuzz_kernel_log fuzz_config fuzz_http_request_head fuzz_helper_request fuzz_canary_state
  fuzz_smartctl_json fuzz_scrub_state"
[ -n "$ONLY" ] && TARGETS=$ONLY

if [ "$PREBUILT" = 1 ]; then
  for t in $TARGETS; do
    [ -x "$BUILD/fuzz/$t" ] || { echo "--prebuilt: no $BUILD/fuzz/$t (build it: FSAUDIT_SANITIZE=1 scripts/test.sh with clang)" >&2; exit 2; }
  done
  # Its sanitizers, not --sanitizers': what the result lines say.
  SANITIZERS=$(sed -n 's/^FSAUDIT_SANITIZE:BOOL=ON$/address,undefined/p' "$BUILD/CMakeCache.txt")
  [ -n "$SANITIZERS" ] || SANITIZERS=$(sed -n 's/^FSAUDIT_FUZZ_SANITIZERS:STRING=//p' "$BUILD/CMakeCache.txt")
else
  CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S "$HERE" -B "$BUILD" -DFSAUDIT_FUZZ=ON -DFSAUDIT_TESTS=OFF \
    "-DFSAUDIT_FUZZ_SANITIZERS=$SANITIZERS" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null
  # shellcheck disable=SC2086
  cmake --build "$BUILD" -j"$JOBS" --target $TARGETS >/dev/null
fi

# Seeds: every fixture file that fits the parser, from tests/fixtures and/or tests/data (whichever
# exist), plus fuzz/seeds/<target>/ and the regression inputs in fuzz/regressions/<target>/.
FIXDIRS=""
for d in "$HERE/tests/fixtures" "$HERE/tests/data"; do [ -d "$d" ] && FIXDIRS="$FIXDIRS $d"; done
seed_files() {
  local t=$1
  # shellcheck disable=SC2086
  case "$t" in
    fuzz_zpool_status_text) find $FIXDIRS -type f \( -ipath '*zfs*status*' -o -ipath '*zpool*status*' \) ! -name '*.json' ;;
    fuzz_zpool_status_json) find $FIXDIRS -type f \( -ipath '*zfs*.json' -o -ipath '*zpool*.json' \) ;;
    fuzz_zpool_list) find $FIXDIRS -type f \( -ipath '*zfs*list*' -o -ipath '*zpool*list*' -o -ipath '*zpool*get*' \) ;;
    fuzz_btrfs_scrub_status) find $FIXDIRS -type f -ipath '*btrfs*scrub*' ;;
    fuzz_btrfs_device_stats) find $FIXDIRS -type f -ipath '*device-stats*' ;;
    fuzz_btrfs_sysfs) find $FIXDIRS -type f -path '*btrfs*' -name error_stats ;;
    fuzz_bcachefs) find $FIXDIRS -type f -path '*bcachefs*' ! -name '*.md' ;;
    fuzz_md) find $FIXDIRS -type f -ipath '*mdstat*' ;;
    fuzz_xfs_spaceman) find $FIXDIRS -type f -ipath '*spaceman*' ;;
    fuzz_ext4_sysfs) ;;  # built below from the ext4 sysfs trees
    fuzz_mountinfo) find $FIXDIRS -type f -ipath '*mountinfo*' ! -name '*.md' ;;
    fuzz_kernel_log) find $FIXDIRS -type f \( -ipath '*kernel_log*' -o -ipath '*kernel-*' \) ! -name '*.md' ! -name '*.sh' ;;
    fuzz_config) find "$HERE/config" $FIXDIRS -type f \( -name '*.yaml' -o -name '*.yml' \) ;;
    fuzz_http_request_head) ;;  # seeds in fuzz/seeds/fuzz_http_request_head/
    fuzz_helper_request) ;;  # fuzz/seeds/fuzz_helper_request
    fuzz_canary_state) ;;  # fuzz/seeds/fuzz_canary_state (a marker and a record their writers wrote)
    fuzz_smartctl_json) find $FIXDIRS -type f -path '*smart*' -name '*.json' ;;
    fuzz_scrub_state) ;;  # fuzz/seeds/fuzz_scrub_state
  esac 2>/dev/null || true
}

# One target; its result line goes to $BUILD/$t.result.
fuzz_one() {
  local t=$1
  local corpus=$BUILD/corpus/$t art=$BUILD/artifacts/$t
  mkdir -p "$corpus" "$art"
  seed_files "$t" | while read -r f; do cp -f "$f" "$corpus/seed-$(basename "$f")"; done
  if [ "$t" = fuzz_ext4_sysfs ]; then
    # shellcheck disable=SC2086
    for dir in $(find $FIXDIRS -type f -path '*ext4*' -name errors_count -printf '%h\n' 2>/dev/null); do
      out=$corpus/seed-$(echo "$dir" | md5sum | cut -c1-8)
      : >"$out"
      for f in "$dir"/*; do [ -f "$f" ] && printf '%s=%s\0' "$(basename "$f")" "$(cat "$f")" >>"$out"; done
    done
  fi
  local extra=()
  for d in "$HERE/fuzz/seeds/$t" "$HERE/fuzz/regressions/$t"; do [ -d "$d" ] && extra+=("$d"); done
  local args=(-print_final_stats=1 "-max_len=$MAX_LEN" -timeout=10 -rss_limit_mb=2048 "-artifact_prefix=$art/")
  [ "$RUNS" -gt 0 ] && args+=("-runs=$RUNS")
  [ "$SECONDS_EACH" -gt 0 ] && args+=("-max_total_time=$SECONDS_EACH")
  local log=$BUILD/$t.log rc=0 t0 t1
  t0=$(date +%s)
  nice -n "$NICE" "$BUILD/fuzz/$t" "${args[@]}" "$corpus" "${extra[@]}" >"$log" 2>&1 || rc=$?
  t1=$(date +%s)
  local execs speed last cov ft corp result=ok
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p')
  [ "$rc" -ne 0 ] && result="CRASH (rc $rc, see $log, inputs in $art)"
  printf '%-26s %12s %10s %8s %8s %8s %7s %-18s %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" \
    "$((t1 - t0))" "$SANITIZERS" "$result" >"$BUILD/$t.result"
  cat "$BUILD/$t.result"
}

RESULTS=$BUILD/fuzz-results.txt
: >"$RESULTS"
printf '%-26s %12s %10s %8s %8s %8s %7s %-18s %s\n' target executions exec/s cov ft corpus secs sanitizers result
running=0
for t in $TARGETS; do
  rm -f "$BUILD/$t.result"
  if [ "$running" -ge "$PARALLEL" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait || true
failed=0
printf '%-26s %12s %10s %8s %8s %8s %7s %-18s %s\n' target executions exec/s cov ft corpus secs sanitizers result >"$RESULTS"
for t in $TARGETS; do
  if [ -f "$BUILD/$t.result" ]; then cat "$BUILD/$t.result" >>"$RESULTS"; else echo "$t: no result" >>"$RESULTS"; fi
  grep -q ' ok$' "$BUILD/$t.result" 2>/dev/null || failed=1
done
echo "== all targets =="
cat "$RESULTS"
echo "results: $RESULTS"
exit $failed
