#!/usr/bin/env bash
# How many fsyncs fsauditd's latency sampler issues when many mounts share few device stacks.
#
#   bench/latency_stacks.sh          (root: loop devices, mounts, tracefs)
#
# Builds one btrfs on a loop device with SUBVOLS subvolumes, each mounted on its own mount point
# (plus the top level), and EXT4 small ext4 filesystems; runs fsauditd (default latency settings)
# on all of them as explicit targets; after a warm-up counts, over DURATION seconds, the io_uring
# FSYNC submissions of fsauditd's threads in the kernel (a private tracefs instance, pid-filtered)
# and fsauditd's CPU time. Prints mounts, samplers (fsaudit_latency_samplers), fsync/s measured and
# the budget (min(stacks x stack rate, host rate)). Everything it creates is removed at exit.
# Environment: SUBVOLS (default 50), EXT4 (default 2), DURATION (default 60), FSAUDITD (binary).
set -euo pipefail

SUBVOLS=${SUBVOLS:-50}
EXT4=${EXT4:-2}
DURATION=${DURATION:-60}
HERE=$(cd "$(dirname "$0")/.." && pwd)
FSAUDITD=${FSAUDITD:-}
if [[ -z "$FSAUDITD" ]]; then
  for c in "$HERE"/build*/daemon/fsauditd; do [[ -x "$c" ]] && FSAUDITD=$c && break; done
fi
[[ -x "${FSAUDITD:-}" ]] || { echo "fsauditd not found: build target fsauditd or set FSAUDITD" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "needs root (loop devices, mounts, tracefs)" >&2; exit 2; }

WORK=$(mktemp -d /tmp/fsaudit-latency-stacks.XXXXXX)
LOOPS=()
MOUNTS=()
PID=""
TRACE=""
INST=""
cleanup() {
  set +e
  [[ -n "$PID" ]] && kill "$PID" && wait "$PID" 2>/dev/null
  if [[ -n "$INST" ]]; then echo 0 > "$INST/tracing_on"; rmdir "$INST"; fi
  [[ -n "$TRACE" ]] && umount "$TRACE"
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[$i]}"; done
  for l in "${LOOPS[@]}"; do losetup -d "$l"; done
  rm -rf "$WORK"
}
trap cleanup EXIT

truncate -s 512M "$WORK/btrfs.img"
L=$(losetup -f --show "$WORK/btrfs.img"); LOOPS+=("$L")
mkfs.btrfs -f -q "$L" >/dev/null 2>&1
mkdir -p "$WORK/top"; mount -t btrfs "$L" "$WORK/top"; MOUNTS+=("$WORK/top")
for ((i = 0; i < SUBVOLS; i++)); do
  btrfs -q subvolume create "$WORK/top/sv$i" >/dev/null
  mkdir -p "$WORK/m/sv$i"; mount -t btrfs -o "subvol=sv$i" "$L" "$WORK/m/sv$i"; MOUNTS+=("$WORK/m/sv$i")
done
for ((i = 0; i < EXT4; i++)); do
  truncate -s 64M "$WORK/ext4-$i.img"
  L=$(losetup -f --show "$WORK/ext4-$i.img"); LOOPS+=("$L")
  mkfs.ext4 -q -F "$L"
  mkdir -p "$WORK/e$i"; mount -t ext4 "$L" "$WORK/e$i"; MOUNTS+=("$WORK/e$i")
done
STACKS=$((1 + EXT4))

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$WORK/state"
{
  echo "listen: 127.0.0.1:$PORT"
  echo "state_dir: $WORK/state"
  echo "targets:"
  echo "  discover: false"
  echo "  explicit:"
  for m in "${MOUNTS[@]}"; do echo "    - path: $m"; done
  echo "scrub:"
  echo "  observe_only: true"
} > "$WORK/fsaudit.yaml"
"$FSAUDITD" --config "$WORK/fsaudit.yaml" > "$WORK/fsauditd.log" 2>&1 &
PID=$!
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v n="$1" '$1 == n {print $2}' | head -1; }
for _ in $(seq 1 60); do
  [[ "$(metric fsaudit_latency_samplers)" == "$STACKS" ]] && break
  sleep 1
done
sleep 10  # every stack filled its probe file and sampled

TRACE="$WORK/tracefs"; mkdir -p "$TRACE"; mount -t tracefs nodev "$TRACE"
INST="$TRACE/instances/fsaudit-bench-$$"; mkdir "$INST"
echo 1 > "$INST/options/event-fork"
echo "$(ls /proc/$PID/task | tr '\n' ' ')" > "$INST/set_event_pid"
echo "opcode == 3" > "$INST/events/io_uring/io_uring_submit_req/filter"
echo 1 > "$INST/events/io_uring/io_uring_submit_req/enable"
ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
: > "$INST/trace"
T0=$(ticks); OWN0=$(metric fsaudit_latency_fsyncs_total)
echo 1 > "$INST/tracing_on"
sleep "$DURATION"
echo 0 > "$INST/tracing_on"
T1=$(ticks); OWN1=$(metric fsaudit_latency_fsyncs_total)
N=$(grep -c io_uring_submit_req "$INST/trace" || true)
HZ=$(getconf CLK_TCK)
SAMPLERS=$(metric fsaudit_latency_samplers)
STACK_RATE=$(metric 'fsaudit_latency_budget_writes_per_second{scope="stack"}')
HOST_RATE=$(metric 'fsaudit_latency_budget_writes_per_second{scope="host"}')
python3 - "$N" "$DURATION" "$SAMPLERS" "${#MOUNTS[@]}" "$STACK_RATE" "$HOST_RATE" "$T0" "$T1" "$HZ" "$OWN0" "$OWN1" "$(uname -r)" <<'EOF'
import sys
n, dur, samplers, mounts, srate, hrate, t0, t1, hz, own0, own1, kernel = sys.argv[1:]
n, dur, samplers, mounts = int(n), float(dur), int(float(samplers)), int(mounts)
srate, hrate = float(srate), float(hrate)
budget = min(samplers * srate, hrate)
cpu = (int(t1) - int(t0)) / int(hz)
print(f"# latency_stacks: kernel {kernel}; {mounts} mounts (btrfs top + subvolumes, ext4), {dur:.0f} s")
print(f"mounts {mounts}  samplers {samplers}  fsyncs {n} (fsaudit's own count {float(own1) - float(own0):.0f})")
print(f"fsync/s measured {n / dur:.2f}  budget {budget:.2f}  ratio {n / dur / budget:.3f}  "
      f"one sampler per mount at 4/s would be {4 * mounts}/s")
print(f"fsauditd CPU {cpu:.2f} s in {dur:.0f} s = {100 * cpu / dur:.2f} % of one core (all probes)")
EOF
