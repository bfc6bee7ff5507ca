#!/bin/sh
# usage: scripts/build.sh [BUILD_DIR] [extra cmake args...]   (default build/)
# Uses ccache when installed. FSAUDIT_CORPUS_DIR=DIR (the shared tool-output corpus) also builds the
# conformance suite against it.
set -eu
corpus=""
if [ -n "${FSAUDIT_CORPUS_DIR:-}" ]; then
  corpus=$(cd "$FSAUDIT_CORPUS_DIR" && pwd) || { echo "build.sh: FSAUDIT_CORPUS_DIR=$FSAUDIT_CORPUS_DIR is not a directory" >&2; exit 2; }
fi
cd "$(dirname "$0")/.."
dir=${1:-build}
[ $# -gt 0 ] && shift
set -- -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
if command -v ccache >/dev/null 2>&1; then
  set -- -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "$@"
  # Paths relative to the checkout, so several checkouts (and build dirs) share cache entries.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
fi
[ -n "$corpus" ] && set -- "-DFSAUDIT_CORPUS_DIR=$corpus" "$@"
log=$(mktemp)
if ! cmake -S . -B "$dir" "$@" >"$log" 2>&1; then cat "$log" >&2; rm -f "$log"; exit 1; fi
grep -i 'corpus\|conformance' "$log" || true   # whether the conformance suite is built, and against what
rm -f "$log"
cmake --build "$dir" -j"$(nproc)"
