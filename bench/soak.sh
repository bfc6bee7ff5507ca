#!/bin/bash
# Soak: fsauditd with every probe at a 100 ms interval on a small lab (an ext4 loop filesystem and a
# directory on the root filesystem, the kernel log from /dev/kmsg) for DURATION seconds. Samples the
# daemon's RSS, open fds and threads every 10 s, prints the series, and fails when any of them grows
# between the first sample after warm-up and the end (RSS by more than 10 % + 2 MiB, fds or threads at all).
# Usage (root): bench/soak.sh [DURATION_SECONDS=1800] [FSAUDITD=build/daemon/fsauditd]
set -euo pipefail
DURATION=${1:-1800}
BIN=${2:-build/daemon/fsauditd}
[ "$(id -u)" = 0 ] || { echo "soak: needs root (loop device, mount)"; exit 2; }
[ -x "$BIN" ] || { echo "soak: $BIN not built"; exit 2; }
DIR=$(mktemp -d /tmp/fsaudit-soak.XXXXXX)
LOOP="" PID=""
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  mountpoint -q "$DIR/mnt" && { umount "$DIR/mnt" || umount -l "$DIR/mnt"; }
  [ -n "$LOOP" ] && losetup -d "$LOOP" || true
  rm -rf "$DIR"
}
trap cleanup EXIT
trap "exit 130" INT TERM
truncate -s 32M "$DIR/ext4.img"
LOOP=$(losetup -f --show "$DIR/ext4.img")
mkfs.ext4 -q -F "$LOOP"
mkdir -p "$DIR/mnt" "$DIR/plain" "$DIR/state"
mount "$LOOP" "$DIR/mnt"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
fast="{interval: 100ms, jitter: 0s, timeout: 5s}"
cat > "$DIR/fsaudit.yaml" <<YAML
listen: 127.0.0.1:$PORT
state_dir: $DIR/state
targets:
  discover: false
  explicit: [{path: $DIR/mnt}, {path: $DIR/plain}]
probes:
  capacity: $fast
  mount: $fast
  ext4: $fast
  kernel_log: $fast
  md: $fast
  scrub: $fast
kernel_log:
  source: kmsg
YAML
"$BIN" --config "$DIR/fsaudit.yaml" > "$DIR/log" 2>&1 &
PID=$!
sleep 5
kill -0 "$PID" || { echo "soak: fsauditd exited:"; cat "$DIR/log"; exit 1; }
echo "soak: fsauditd pid $PID, 100 ms intervals, ${DURATION}s, config $DIR/fsaudit.yaml"
printf '%8s %10s %6s %8s %12s\n' t_s rss_kib fds threads runs_total
declare -a RSS FDS THR
start=$(date +%s)
while :; do
  now=$(( $(date +%s) - start ))
  kill -0 "$PID" || { echo "soak: fsauditd died"; tail -20 "$DIR/log"; exit 1; }
  rss=$(awk '/^VmRSS/{print $2}' /proc/$PID/status)
  thr=$(awk '/^Threads/{print $2}' /proc/$PID/status)
  fds=$(ls /proc/$PID/fd | wc -l)
  runs=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" | awk '/^fsaudit_probe_runs_total\{/{s+=$2} END{printf "%d", s}')
  printf '%8d %10d %6d %8d %12s\n' "$now" "$rss" "$fds" "$thr" "$runs"
  RSS+=("$rss") FDS+=("$fds") THR+=("$thr")
  [ "$now" -ge "$DURATION" ] && break
  sleep 10
done
n=${#RSS[@]}
base=1; [ "$n" -gt 3 ] && base=3   # first 30 s are warm-up (pools, caches, first runs)
[ "$base" -ge "$n" ] && base=$((n - 1))
fail=0
last=$((n - 1))
max_rss=$(( RSS[base] + RSS[base] / 10 + 2048 ))
[ "${RSS[last]}" -le "$max_rss" ] || { echo "soak: RSS grew ${RSS[base]} -> ${RSS[last]} KiB"; fail=1; }
[ "${FDS[last]}" -le "${FDS[base]}" ] || { echo "soak: fds grew ${FDS[base]} -> ${FDS[last]}"; fail=1; }
[ "${THR[last]}" -le "${THR[base]}" ] || { echo "soak: threads grew ${THR[base]} -> ${THR[last]}"; fail=1; }
[ "$fail" = 0 ] && echo "soak: flat (RSS ${RSS[base]} -> ${RSS[last]} KiB, fds ${FDS[base]} -> ${FDS[last]}, threads ${THR[base]} -> ${THR[last]})"
exit "$fail"
