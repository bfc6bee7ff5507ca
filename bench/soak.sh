#!/bin/bash
# Soak: fsauditd with every probe at a 100 ms interval on a small lab (an ext4 loop filesystem and a
# directory on the root filesystem, the kernel log from /dev/kmsg) for DURATION seconds.
#
# Every SAMPLE seconds it reads the daemon's RSS, open fds and threads and prints one row. fds and
# threads are instantaneous counts that a run in flight raises for a moment (a /proc or /dev/kmsg file
# open, a command's pipes), so each row takes them 5 times over ~0.5 s and keeps the lowest: the
# resting count, which a leak raises and a run in flight does not. The check is on the steady state,
# every row after WARMUP seconds (pools, caches and first runs settle first): over those rows
#   fds     max - min <= FD_SLACK      (default 1)
#   threads max - min <= THREAD_SLACK  (default 2: the worker pool adds at most a few workers while a
#                                       run is stuck past its timeout and never shrinks)
#   RSS     max - min <= 10 % of min + RSS_SLACK_KIB (default 2048)
# A leak of one fd or thread per run, or of a few bytes per run, crosses these within minutes at
# 100 ms intervals; a fixed bound does not depend on which instant happens to be sampled last.
#
# Usage (root): bench/soak.sh [DURATION_SECONDS=1800] [FSAUDITD=build/daemon/fsauditd]
# env: SAMPLE=10 WARMUP=60 FD_SLACK=1 THREAD_SLACK=2 RSS_SLACK_KIB=2048
set -euo pipefail
DURATION=${1:-1800}
BIN=${2:-build/daemon/fsauditd}
SAMPLE=${SAMPLE:-10}
WARMUP=${WARMUP:-60}
FD_SLACK=${FD_SLACK:-1}
THREAD_SLACK=${THREAD_SLACK:-2}
RSS_SLACK_KIB=${RSS_SLACK_KIB:-2048}
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
declare -a T RSS FDS THR
# Lowest of 5 readings over ~0.5 s: fds and threads at rest.
resting() {  # $1 = fd | thr
  local lo="" v i
  for i in 1 2 3 4 5; do
    if [ "$1" = fd ]; then v=$(ls /proc/$PID/fd | wc -l); else v=$(awk '/^Threads/{print $2}' /proc/$PID/status); fi
    { [ -z "$lo" ] || [ "$v" -lt "$lo" ]; } && lo=$v
    sleep 0.1
  done
  echo "$lo"
}
start=$(date +%s)
while :; do
  now=$(( $(date +%s) - start ))
  kill -0 "$PID" || { echo "soak: fsauditd died"; tail -20 "$DIR/log"; exit 1; }
  rss=$(awk '/^VmRSS/{print $2}' /proc/$PID/status)
  fds=$(resting fd)
  thr=$(resting thr)
  runs=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" | awk '/^fsaudit_probe_runs_total\{/{s+=$2} END{printf "%d", s}')
  printf '%8d %10d %6d %8d %12s\n' "$now" "$rss" "$fds" "$thr" "$runs"
  T+=("$now") RSS+=("$rss") FDS+=("$fds") THR+=("$thr")
  [ "$now" -ge "$DURATION" ] && break
  sleep "$SAMPLE"
done
# Steady state: the rows after the warm-up (at least 3; else the last 3).
n=${#T[@]}
first=0
while [ "$first" -lt "$n" ] && [ "${T[first]}" -lt "$WARMUP" ]; do first=$((first + 1)); done
[ $((n - first)) -lt 3 ] && first=$(( n > 3 ? n - 3 : 0 ))
range() {  # name of an array -> "min max"
  local -n a=$1
  local lo=${a[first]} hi=${a[first]} i
  for ((i = first; i < n; i++)); do
    [ "${a[i]}" -lt "$lo" ] && lo=${a[i]}
    [ "${a[i]}" -gt "$hi" ] && hi=${a[i]}
  done
  echo "$lo $hi"
}
read -r rlo rhi < <(range RSS)
read -r flo fhi < <(range FDS)
read -r tlo thi < <(range THR)
echo "soak: steady state = $((n - first)) rows from t=${T[first]} s: RSS $rlo..$rhi KiB, fds $flo..$fhi, threads $tlo..$thi"
fail=0
[ $((rhi - rlo)) -le $((rlo / 10 + RSS_SLACK_KIB)) ] || { echo "soak: RSS range $((rhi - rlo)) KiB > 10 % + $RSS_SLACK_KIB KiB"; fail=1; }
[ $((fhi - flo)) -le "$FD_SLACK" ] || { echo "soak: fds range $((fhi - flo)) > $FD_SLACK"; fail=1; }
[ $((thi - tlo)) -le "$THREAD_SLACK" ] || { echo "soak: threads range $((thi - tlo)) > $THREAD_SLACK"; fail=1; }
[ "$fail" = 0 ] && echo "soak: flat"
exit "$fail"
