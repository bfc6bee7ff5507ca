#!/bin/bash
# Soak: fsauditd with every probe at a 100 ms interval on a small lab (an ext4 loop filesystem and a
# directory on the root filesystem, the kernel log from /dev/kmsg) for DURATION seconds. The fsync
# latency sampler looks for due stacks every 100 ms and samples the loop filesystem 10 times a second
# (each sample through its sampler process); the filesystem holding the directory is excluded from it,
# so the soak writes on its own loop device only.
#
# Every SAMPLE seconds it reads the daemon's RSS, open fds, threads and child processes (statfs
# helpers, sampler processes) and prints one row. fds and
# threads are instantaneous counts that a run in flight raises for a moment (a /proc, sysfs or
# /dev/kmsg file open, a command's pipes), so each row takes them 10 times over ~1 s and keeps the
# lowest: the resting count, which a leak raises and a run in flight rarely does. The check is on the
# steady state, every row after WARMUP seconds (pools, caches, first runs settle first):
#   - the floor must not rise: the lowest fds/threads of the last third of the rows <= the lowest of
#     the first third (a leak raises every later reading; runs in flight do not raise a minimum);
#   - and the range is bounded: fds max - min <= FD_SLACK (default 4: runs in flight at 100 ms on a
#     loaded machine), threads max - min <= THREAD_SLACK (default 2: the worker pool adds a worker
#     while a run is stuck past its timeout and never shrinks), RSS max - min <= 10 % of min +
#     RSS_SLACK_KIB (default 2048).
# A leak of one fd or thread per run, or of a few bytes per run, crosses these within minutes at
# 100 ms intervals; none of them depends on which instant happens to be sampled last.
#
# Usage (root): bench/soak.sh [DURATION_SECONDS=1800] [FSAUDITD=build/daemon/fsauditd]
# env: SAMPLE=10 WARMUP=60 FD_SLACK=4 THREAD_SLACK=2 RSS_SLACK_KIB=2048 CHILD_MAX=4 (helper and sampler
#   processes: one statfs helper per target, one sampler process here, none piling up)
set -euo pipefail
DURATION=${1:-1800}
BIN=${2:-build/daemon/fsauditd}
SAMPLE=${SAMPLE:-10}
WARMUP=${WARMUP:-60}
FD_SLACK=${FD_SLACK:-4}
THREAD_SLACK=${THREAD_SLACK:-2}
RSS_SLACK_KIB=${RSS_SLACK_KIB:-2048}
CHILD_MAX=${CHILD_MAX:-4}
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
PLAIN_MOUNT=$(findmnt -n -o TARGET --target "$DIR/plain")
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
latency:
  interval: 100ms
  exclude: ["$PLAIN_MOUNT"]
  budget: {stack_writes_per_second: 10, writes_per_second: 20}
YAML
"$BIN" --config "$DIR/fsaudit.yaml" > "$DIR/log" 2>&1 &
PID=$!
sleep 5
kill -0 "$PID" || { echo "soak: fsauditd exited:"; cat "$DIR/log"; exit 1; }
echo "soak: fsauditd pid $PID, 100 ms intervals, ${DURATION}s, config $DIR/fsaudit.yaml"
printf '%8s %10s %6s %8s %9s %12s %8s\n' t_s rss_kib fds threads children runs_total fsyncs
declare -a T RSS FDS THR KIDS
# Lowest of 10 readings over ~1 s: fds and threads at rest.
resting() {  # $1 = fd | thr
  local lo="" v i
  for i in 1 2 3 4 5 6 7 8 9 10; do
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
  kids=$(ps -o pid= --ppid "$PID" | wc -l)
  scrape=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics")
  runs=$(awk '/^fsaudit_probe_runs_total\{/{s+=$2} END{printf "%d", s}' <<<"$scrape")
  fsyncs=$(awk '/^fsaudit_latency_fsyncs_total /{printf "%d", $2}' <<<"$scrape")
  printf '%8d %10d %6d %8d %9d %12s %8s\n' "$now" "$rss" "$fds" "$thr" "$kids" "$runs" "${fsyncs:-0}"
  T+=("$now") RSS+=("$rss") FDS+=("$fds") THR+=("$thr") KIDS+=("$kids")
  [ "$now" -ge "$DURATION" ] && break
  sleep "$SAMPLE"
done
# Steady state: the rows after the warm-up (at least 3; else the last 3).
n=${#T[@]}
first=0
while [ "$first" -lt "$n" ] && [ "${T[first]}" -lt "$WARMUP" ]; do first=$((first + 1)); done
[ $((n - first)) -lt 3 ] && first=$(( n > 3 ? n - 3 : 0 ))
range() {  # name of an array, first row, end row (exclusive) -> "min max"
  local -n a=$1
  local lo=${a[$2]} hi=${a[$2]} i
  for ((i = $2; i < $3; i++)); do
    [ "${a[i]}" -lt "$lo" ] && lo=${a[i]}
    [ "${a[i]}" -gt "$hi" ] && hi=${a[i]}
  done
  echo "$lo $hi"
}
third=$(( (n - first) / 3 )); [ "$third" -lt 1 ] && third=1
read -r rlo rhi < <(range RSS "$first" "$n")
read -r flo fhi < <(range FDS "$first" "$n")
read -r tlo thi < <(range THR "$first" "$n")
read -r klo khi < <(range KIDS "$first" "$n")
read -r f_early _ < <(range FDS "$first" $((first + third)))
read -r f_late _ < <(range FDS $((n - third)) "$n")
read -r t_early _ < <(range THR "$first" $((first + third)))
read -r t_late _ < <(range THR $((n - third)) "$n")
echo "soak: steady state = $((n - first)) rows from t=${T[first]} s: RSS $rlo..$rhi KiB, fds $flo..$fhi," \
  "threads $tlo..$thi, children $klo..$khi; lowest fds first/last third $f_early/$f_late, threads $t_early/$t_late"
fail=0
[ $((rhi - rlo)) -le $((rlo / 10 + RSS_SLACK_KIB)) ] || { echo "soak: RSS range $((rhi - rlo)) KiB > 10 % + $RSS_SLACK_KIB KiB"; fail=1; }
[ $((fhi - flo)) -le "$FD_SLACK" ] || { echo "soak: fds range $((fhi - flo)) > $FD_SLACK"; fail=1; }
[ $((thi - tlo)) -le "$THREAD_SLACK" ] || { echo "soak: threads range $((thi - tlo)) > $THREAD_SLACK"; fail=1; }
[ "$f_late" -le "$f_early" ] || { echo "soak: resting fds rose $f_early -> $f_late"; fail=1; }
[ "$t_late" -le "$t_early" ] || { echo "soak: resting threads rose $t_early -> $t_late"; fail=1; }
[ "$khi" -le "$CHILD_MAX" ] || { echo "soak: $khi child processes > $CHILD_MAX"; fail=1; }
[ "$fail" = 0 ] && echo "soak: flat"
exit "$fail"
