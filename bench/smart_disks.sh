#!/bin/bash
# The SMART probe's cost at many disks, through a fake smartctl with a realistic latency, against the
# least any tool pays for the same reads (xargs running the same fake with the same concurrency),
# measured in one run.
#
# The host is a synthetic tree (sys/, proc/self/mountinfo, dev/) with DISKS SATA disks, each with one
# ext4 partition mounted at /srv/dN: fsauditd reads it through host: {sysfs, procfs, devfs}, as
# node_exporter does with --path.sysfs, so no real disk is touched. The fake smartctl answers after
# 100 ms .. 2 s (fixed per disk by a hash of its name, so both runs see the same latencies) with a
# real smartctl 7.0 JSON of a healthy disk (tests/fixtures/smart) and logs the milliseconds it took.
#
# fsauditd runs as a daemon with only the smart probe enabled, with its default smart section
# (concurrency 2, call_timeout 60 s; CONCURRENCY overrides), as root, so it runs smartctl itself
# (an unprivileged daemon asks fsaudit-helper, which runs the same command: add the helper's socket
# round trip per disk). Printed: the run's wall time (the probe's own fsaudit_probe_duration_seconds_total),
# fsauditd's own CPU (utime+stime of the process, its threads included) and its children's
# (the fakes), the reference's, their ratios, and per hour at the default interval (30 min): daemon
# CPU and the host's smartctl time (the sum of every call's latency: the time some disk is busy
# answering).
#
# usage: bench/smart_disks.sh [FSAUDITD]     env: DISKS=100 CONCURRENCY=2 MIN_MS=100 MAX_MS=2000
set -euo pipefail
cd "$(dirname "$0")/.."
FSAUDITD=$(realpath "${1:-build/daemon/fsauditd}")
DISKS=${DISKS:-100}
CONCURRENCY=${CONCURRENCY:-2}
MIN_MS=${MIN_MS:-100}
MAX_MS=${MAX_MS:-2000}
FIXTURE=$(realpath tests/fixtures/smart/smartctl-7.0-ata-hdd-wd140edfz-healthy-all-zero.json)
[ "$(id -u)" = 0 ] || { echo "smart_disks.sh: run as root (as root fsauditd runs smartctl itself, no helper needed)" >&2; exit 2; }
command -v curl >/dev/null || { echo "smart_disks.sh: apt-get install curl" >&2; exit 2; }

tmp=$(mktemp -d /tmp/fsaudit-smart-bench.XXXXXX)
pid=""
cleanup() { [ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; } || true; [ -n "${KEEP:-}" ] || rm -rf "$tmp"; }
trap cleanup EXIT
T=$tmp/host

# sda..sdz, sdaa.. as the kernel names them.
disk_name() {
  local i=$1 s=""
  if [ "$i" -lt 26 ]; then printf 'sd%s' "$(printf "\\$(printf '%03o' $((97 + i)))")"; return; fi
  s=$(printf "\\$(printf '%03o' $((96 + i / 26)))")$(printf "\\$(printf '%03o' $((97 + i % 26)))")
  printf 'sd%s' "$s"
}

mkdir -p "$T/sys/class/block" "$T/dev" "$T/proc/self"
echo "21 1 254:0 / / rw,relatime shared:1 - ext4 /dev/mapper/root rw" > "$T/proc/self/mountinfo"
names=()
for ((i = 0; i < DISKS; i++)); do
  n=$(disk_name $i); names+=("$n")
  rel="devices/pci0000:00/0000:00:17.0/ata$((i + 1))/host$i/target$i:0:0/$i:0:0:0"
  dev="$T/sys/$rel"
  mkdir -p "$dev/block/$n/${n}1"
  echo "ST4000DM004-2CV104" > "$dev/model"
  printf 'ATA     \n' > "$dev/vendor"
  printf 'naa.5000c500%08x\n' "$i" > "$dev/wwid"
  echo "8:$((i * 16))" > "$dev/block/$n/dev"
  echo "8:$((i * 16 + 1))" > "$dev/block/$n/${n}1/dev"
  echo 1 > "$dev/block/$n/${n}1/partition"
  ln -s "../../../.." "$dev/block/$n/device"
  ln -s "../../$rel/block/$n" "$T/sys/class/block/$n"
  ln -s "../../$rel/block/$n/${n}1" "$T/sys/class/block/${n}1"
  : > "$T/dev/$n"; : > "$T/dev/${n}1"
  echo "$((30 + i)) 21 8:$((i * 16 + 1)) / /srv/d$i rw,relatime shared:$((2 + i)) - ext4 /dev/${n}1 rw" >> "$T/proc/self/mountinfo"
done

cat > "$tmp/smartctl" <<FAKE
#!/bin/bash
# fake smartctl: the last argument is /dev/<disk>; answer after a latency fixed by the disk's name.
disk=\${!#}; disk=\${disk##*/}
h=\$(printf '%s' "\$disk" | cksum | cut -d' ' -f1)
ms=\$(( $MIN_MS + h % ($MAX_MS - $MIN_MS + 1) ))
sleep "\$(printf '%d.%03d' \$((ms / 1000)) \$((ms % 1000)))"
grep -v '^# source:' "$FIXTURE"
echo "\$disk \$ms" >> "\$SMART_LOG"
FAKE
chmod 755 "$tmp/smartctl"

# The reference: the same reads, CONCURRENCY at a time, by xargs.
export SMART_LOG=$tmp/ref.log
: > "$SMART_LOG"
TIMEFORMAT='%R %U %S'
ref_times=$( { time printf '/dev/%s\n' "${names[@]}" | xargs -P "$CONCURRENCY" -n 1 "$tmp/smartctl" --json -a -n standby > /dev/null; } 2>&1 )
read -r ref_wall ref_u ref_s <<<"$ref_times"
ref_cpu=$(echo "$ref_u + $ref_s" | bc)
[ "$(wc -l < "$SMART_LOG")" = "$DISKS" ] || { echo "smart_disks.sh: the reference read $(wc -l < "$SMART_LOG") of $DISKS disks" >&2; exit 1; }
busy_ms=$(awk '{s += $2} END {print s}' "$SMART_LOG")

export SMART_LOG=$tmp/daemon.log
: > "$SMART_LOG"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
off=""
for p in capacity mount zfs btrfs bcachefs xfs ext4 md disk kernel_log scrub setup; do off+="  $p: {enabled: false}"$'\n'; done
cat > "$tmp/fsaudit.yaml" <<CFG
listen: 127.0.0.1:$port
state_dir: $tmp/state
dbus_address: none
host: {procfs: $T/proc, sysfs: $T/sys, devfs: $T/dev}
tools: {smartctl: $tmp/smartctl}
latency: {enabled: false}
smart: {concurrency: $CONCURRENCY}
probes:
$off  smart: {enabled: true, interval: 1h, jitter: 0s, timeout: 10m}
CFG
"$FSAUDITD" --config "$tmp/fsaudit.yaml" > "$tmp/fsauditd.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  [ "$(wc -l < "$SMART_LOG")" -ge "$DISKS" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/fsauditd.log" >&2; exit 1; }
  sleep 0.5
done
# The run is over when the probe says so (its last fake answered just before).
metrics=""
for _ in $(seq 100); do
  metrics=$(curl -sf "http://127.0.0.1:$port/metrics" || true)
  grep -q '^fsaudit_probe_runs_total{.*probe="smart"' <<<"$metrics" && break
  sleep 0.2
done
read -r utime stime cutime cstime < <(awk '{print $14, $15, $16, $17}' "/proc/$pid/stat")
hz=$(getconf CLK_TCK)
states=$(grep -c '^fsaudit_disk_smart_state{.*state="ok"} 1' <<<"$metrics" || true)
[ "$states" = "$DISKS" ] || { echo "smart_disks.sh: fsauditd exported an ok SMART state for $states of $DISKS disks" >&2;
                              grep 'probe_failure\|smart' <<<"$metrics" | head -20 >&2; exit 1; }
run_wall=$(grep '^fsaudit_probe_duration_seconds_total{.*probe="smart"' <<<"$metrics" | awk '{print $NF}')
awk -v n="$DISKS" -v c="$CONCURRENCY" -v hz="$hz" -v u="$utime" -v s="$stime" -v cu="$cutime" -v cs="$cstime" \
    -v rw="$ref_wall" -v rc="$ref_cpu" -v dw="$run_wall" -v busy="$busy_ms" 'BEGIN {
  self = (u + s) / hz; kids = (cu + cs) / hz
  printf "%d disks, smartctl latency per call 100 ms .. 2 s (mean %.0f ms), concurrency %d\n", n, busy / n, c
  printf "%-34s %12s %14s\n", "", "wall (s)", "CPU (s)"
  printf "%-34s %12.2f %14.3f\n", "reference: xargs -P" c " + fake", rw, rc
  printf "%-34s %12.2f %14.3f  (own %.3f + children %.3f)\n", "fsauditd smart probe, one run", dw, self + kids, self, kids
  printf "ratio fsauditd/reference: wall %.2f, CPU %.2f\n", dw / rw, (self + kids) / rc
  printf "per hour at the default interval (30 min, 2 runs): fsauditd CPU %.2f s (own %.2f), smartctl busy %.0f s\n",
         2 * (self + kids), 2 * self, 2 * busy / 1000
}'
