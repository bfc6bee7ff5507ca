#!/usr/bin/env bash
# Raw pattern-scan throughput of the canary scanner (O_DIRECT + io_uring) vs fio sequential read
# (O_DIRECT, io_uring, same queue depth and block size) on the SAME loop device, in the same run.
# Goal: scanner >= 0.8 x fio.
#
# usage: sudo bench/canary_scan.sh [SIZE_MiB=1024] [ROUNDS=3]
# env:   CANARY_TOOL  command that runs the canary CLI (default: build-canary/probes/canary/fsaudit-canary,
#                     or "fsauditd canary" once main.cpp wires it)
#        QD=32 CHUNK=1MiB  queue depth and read size for both tools
#        LOOP_DIO=on       losetup --direct-io (on: the backing file is read with O_DIRECT too)
set -euo pipefail
SIZE_MIB=${1:-1024}
ROUNDS=${2:-3}
QD=${QD:-32}
CHUNK=${CHUNK:-1MiB}
LOOP_DIO=${LOOP_DIO:-on}
HERE=$(cd "$(dirname "$0")/.." && pwd)
TOOL=${CANARY_TOOL:-$HERE/build-canary/probes/canary/fsaudit-canary}
[ "$(id -u)" = 0 ] || { echo "needs root (losetup)" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio not installed" >&2; exit 1; }

WORK=$(mktemp -d /var/tmp/fsaudit-canary-bench.XXXXXX)
DEV=""
cleanup() {
  [ -n "$DEV" ] && losetup -d "$DEV" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# Real data (not a sparse hole), so that both tools read the same bytes from the disk.
dd if=/dev/urandom of="$WORK/img" bs=1M count="$SIZE_MIB" status=none conv=fsync
DEV=$(losetup -f --show --direct-io="$LOOP_DIO" "$WORK/img")
BYTES=$((SIZE_MIB * 1024 * 1024))
echo "device=$DEV size=${SIZE_MIB}MiB loop_direct_io=$LOOP_DIO queue_depth=$QD read_size=$CHUNK rounds=$ROUNDS"

fio_bw() {
  fio --name=seqread --filename="$DEV" --rw=read --bs="${CHUNK/MiB/M}" --iodepth="$QD" --ioengine=io_uring --fixedbufs=1 --registerfiles=1 \
      --direct=1 --size="$BYTES" --numjobs=1 --output-format=json 2>/dev/null |
    python3 -c 'import json,sys; print(int(json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"]))'
}
scan_bw() {
  $TOOL scan-bench "$DEV" --queue-depth "$QD" --chunk "$CHUNK" | sed -n 's/.*bytes_per_second=\([0-9]*\).*/\1/p'
}

fios=(); scans=()
for r in $(seq "$ROUNDS"); do
  # Alternate which tool reads first, so that neither always profits from a cache warmed by the other.
  if [ $((r % 2)) = 1 ]; then f=$(fio_bw); s=$(scan_bw); else s=$(scan_bw); f=$(fio_bw); fi
  fios+=("$f"); scans+=("$s")
  printf 'round %d: fio %8.1f MiB/s   scan %8.1f MiB/s   ratio %.3f\n' "$r" \
    "$(echo "$f/1048576" | bc -l)" "$(echo "$s/1048576" | bc -l)" "$(echo "$s/$f" | bc -l)"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
F=$(median "${fios[@]}"); S=$(median "${scans[@]}")
printf 'median: fio %.1f MiB/s, scan %.1f MiB/s, ratio %.3f (goal >= 0.8)\n' \
  "$(echo "$F/1048576" | bc -l)" "$(echo "$S/1048576" | bc -l)" "$(echo "$S/$F" | bc -l)"
