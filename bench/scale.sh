#!/bin/bash
# fsauditd beside Debian's prometheus-node-exporter on many filesystems, in one run: loop-device
# ext4 (one mkfs, then sparse copies), XFS and btrfs (one mkfs each), and a zfs-fuse pool with
# datasets. For each total size (cumulative: the filesystems of a size stay for the next) both
# daemons start fresh with their default settings (fsauditd's latency sampler on), are scraped every
# 15 s as Prometheus would, and after a settle time this prints over the window: CPU (user+system,
# % of one core, fsauditd and all its child processes together: the latency samples' write+fsync run in
# fsaudit-sampler children, and the tools it runs (zpool, btrfs, xfs_spaceman) are children too) and,
# separately, the children's part, the tools' part and the part in io_uring workers,
# RSS (and the children's private memory), median scrape time, samples, and the ratios
# fsauditd/node_exporter.
#
# usage: bench/scale.sh [--fsauditd PATH] [--minutes N] [--sizes "10 100 1000"] [--perf] [--heap] [--heap-live]
#        bench/scale.sh [FSAUDITD] [WINDOW_SECONDS] [SIZES]          (the older positional form)
# env:   SETTLE=60 (seconds before the window)  SETTLE_PER_1000=0 (seconds more per 1,000 filesystems: one
#        run of "1 100 1000 10000" gives the large size time for its first cycle, not the small ones)
#        SCRAPES=50 (for the median)  LATENCY=1|0
#        MALLOC_STATS=1: after the window, the allocator's stats of fsauditd (through gdb; jemalloc's or glibc's):
#        the heap it holds against what is in use in it (free space between live chunks is RSS that trimming cannot return)
#        EXTRA_CONFIG (YAML appended to fsauditd's config; not together with LATENCY=0)
#
# --perf records `perf record -g` of fsauditd over the window of the largest size into
# /var/tmp/fsaudit-scale-perf.data (kept) and prints its top symbols. PERF_ARGS replaces the
# sampling options (default "-F 199 -g"; "-F 499 --call-graph dwarf" unwinds through libc too, where
# malloc's callers are lost with frame pointers).
#
# Per size it also prints the cost per filesystem: the growth over the smallest size of the run divided by the
# filesystems added (RSS, samples, CPU, scrape time; node_exporter's the same way), so give a small size first
# (--sizes "1 100 1000 10000"); and the first cycle after start: `fsauditd --once` (every probe on every target,
# then the scrape text) timed with its peak RSS (/usr/bin/time), before the daemon of that size starts.
# ZFS=N caps the zfs-fuse datasets (zfs-fuse's own limit on this machine); the rest of a size is ext4.
#
# --heap, at the largest size after its window: one `fsauditd --once` (a whole first cycle, every probe
# on every target, then the scrape text) under heaptrack, into /var/tmp/fsaudit-scale-heap.*; prints
# the heap at its peak and the allocation sites that held most of it (where the resident heap goes).
# --heap-live, at the largest size after its window: the daemon itself under heaptrack for SETTLE seconds
# (its first cycle and then steady state), then killed (SIGKILL: nothing is freed on the way out), so what
# heaptrack reports as leaked is what was live at that moment, by allocation site: the steady-state heap.
# Data in /var/tmp/fsaudit-scale-live.*, the sites in /var/tmp/fsaudit-scale-live.txt.
#
# fsync work: the sampler submits io_uring WRITE linked to FSYNC; the kernel runs every FSYNC (and
# the write when it would block) in fsauditd's io_uring worker threads ("iou-wrk-PID"), so their
# utime+stime, read per thread from /proc/PID/task/*/stat every second over the window, is the
# kernel's fsync work done for fsauditd. Journal commits (jbd2) and flusher kworkers are shared by
# every writer and are charged to no process, so they are in neither figure. The fsyncs issued in
# the window come from fsaudit_latency_fsyncs_total.
#
# Root only. Everything it creates (images, loop devices, mounts, the pool, zfs-fuse if it started
# it, the daemons) is removed on exit, also on failure or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
FSAUDITD=build/daemon/fsauditd WINDOW=600 SIZES="10 100 1000" PERF=0 HEAP=0 HEAP_LIVE=0 pos=0
while [ $# -gt 0 ]; do
  case $1 in
    --fsauditd) FSAUDITD=$2; shift 2 ;;
    --minutes) WINDOW=$(awk -v m="$2" 'BEGIN {printf "%d", m * 60}'); shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --perf) PERF=1; shift ;;
    --heap) HEAP=1; shift ;;
    --heap-live) HEAP_LIVE=1; shift ;;
    -h | --help) sed -n '2,39p' "$0"; exit 0 ;;
    -*) echo "scale.sh: unknown option $1" >&2; exit 2 ;;
    *)
      case $pos in 0) FSAUDITD=$1 ;; 1) WINDOW=$1 ;; 2) SIZES=$1 ;; *) echo "scale.sh: too many arguments" >&2; exit 2 ;; esac
      pos=$((pos + 1)); shift ;;
  esac
done
FSAUDITD=$(realpath "$FSAUDITD")
SETTLE=${SETTLE:-60}
SETTLE_PER_1000=${SETTLE_PER_1000:-0}
SCRAPES=${SCRAPES:-50}
LATENCY=${LATENCY:-1}
[[ $WINDOW =~ ^[0-9]+$ && $WINDOW -gt 0 ]] || { echo "scale.sh: the window must be a positive number of seconds" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "scale.sh: needs root (loop devices, mounts)" >&2; exit 2; }
command -v prometheus-node-exporter >/dev/null || { echo "scale.sh: apt-get install prometheus-node-exporter" >&2; exit 2; }
[ "$HEAP$HEAP_LIVE" = 00 ] || command -v heaptrack >/dev/null || { echo "scale.sh: --heap needs heaptrack (apt-get install heaptrack)" >&2; exit 2; }

ID=$$
IMG=/var/tmp/fsaudit-scale-$ID
ROOT=/srv/fsaudit-scale-$ID
POOL=fsscale$ID
mkdir -p "$IMG" "$ROOT"
LOOPS=(); MOUNTS=(); PIDS=(); ZFS_PID=""; POOL_MADE=0

# Stops a process without ever blocking on one stuck in the kernel (statfs on a hung FUSE mount).
stop_pid() {
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.2; done
  kill -9 "$1" 2>/dev/null
}
cleanup() {
  set +e
  for p in "${PIDS[@]}"; do stop_pid "$p"; done
  # Loop filesystems first: zfs-fuse calls sync() for every dataset it unmounts, and a sync over
  # 800 loop devices made `zpool destroy` fail, leaving a FAULTED pool in zfs-fuse's cache.
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}"; done
  for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
  if [ "$POOL_MADE" = 1 ]; then
    # Unmounting 200 datasets (each a sync() in zfs-fuse) right after 800 loop devices went away
    # outlasted 5 tries of 5 s in every 1,000-target run: up to 3 minutes.
    for _ in $(seq 36); do zpool destroy -f "$POOL" 2>/dev/null && break; sleep 5; done
    zpool list -H "$POOL" >/dev/null 2>&1 && echo "scale.sh: could not destroy pool $POOL (zpool destroy -f $POOL)" >&2
  fi
  [ -n "$ZFS_PID" ] && stop_pid "$ZFS_PID"
  rm -rf "$IMG" "$ROOT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One zfs-fuse per machine, shared with the lab tests through their lock.
exec 9>/run/fsaudit-lab-zfs-fuse.lock
flock 9
if ! zpool list -H >/dev/null 2>&1; then
  zfs-fuse --no-daemon --no-kstat-mount >>/tmp/fsaudit-lab-zfs-fuse.log 2>&1 &
  ZFS_PID=$!
  for _ in $(seq 100); do zpool list -H >/dev/null 2>&1 && break; sleep 0.1; done
fi

truncate -s 16M "$IMG/ext4-base.img"
mkfs.ext4 -q -F -O ^has_journal -m 0 "$IMG/ext4-base.img"
attach() {  # image mountpoint fstype [mount options]
  local dev
  dev=$(losetup -f --show "$1"); LOOPS+=("$dev")
  mkdir -p "$2"
  mount -t "$3" ${4:+-o "$4"} "$dev" "$2"; MOUNTS+=("$2")
}
n_ext4=0 n_xfs=0 n_btrfs=0 n_zfs=0
grow_to() {  # total: about 1/5 ZFS datasets, 1/50 XFS, 1/50 btrfs, the rest ext4
  local total=$1 want_zfs want_xfs want_btrfs want_ext4 t0=$SECONDS
  want_zfs=$((total / 5)); want_xfs=$((total / 50 > 0 ? total / 50 : 1)); want_btrfs=$want_xfs
  [ -z "${ZFS:-}" ] || [ "$want_zfs" -le "$ZFS" ] || want_zfs=$ZFS
  [ "$total" -gt 2 ] || { want_zfs=0; want_xfs=0; want_btrfs=0; }
  want_ext4=$((total - want_zfs - want_xfs - want_btrfs))
  if [ "$POOL_MADE" = 0 ] && [ "$want_zfs" -gt 0 ]; then
    truncate -s 512M "$IMG/pool.img"
    zpool create -f -m "$ROOT/zfs" "$POOL" "$IMG/pool.img"; POOL_MADE=1; n_zfs=1
  fi
  while [ $n_zfs -lt "$want_zfs" ]; do zfs create "$POOL/d$n_zfs"; n_zfs=$((n_zfs + 1)); done
  while [ $n_xfs -lt "$want_xfs" ]; do
    truncate -s 300M "$IMG/xfs$n_xfs.img"; mkfs.xfs -q -f "$IMG/xfs$n_xfs.img"
    attach "$IMG/xfs$n_xfs.img" "$ROOT/xfs$n_xfs" xfs; n_xfs=$((n_xfs + 1))
  done
  while [ $n_btrfs -lt "$want_btrfs" ]; do
    truncate -s 128M "$IMG/btrfs$n_btrfs.img"; mkfs.btrfs -q -f "$IMG/btrfs$n_btrfs.img" >/dev/null
    attach "$IMG/btrfs$n_btrfs.img" "$ROOT/btrfs$n_btrfs" btrfs; n_btrfs=$((n_btrfs + 1))
  done
  while [ $n_ext4 -lt "$want_ext4" ]; do
    cp --sparse=always "$IMG/ext4-base.img" "$IMG/ext4-$n_ext4.img"
    attach "$IMG/ext4-$n_ext4.img" "$ROOT/ext4-$n_ext4" ext4; n_ext4=$((n_ext4 + 1))
  done
  echo "filesystems: $n_ext4 ext4, $n_xfs xfs, $n_btrfs btrfs, $n_zfs zfs-fuse datasets (built in $((SECONDS - t0)) s)" >&2
}

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# utime+stime of the children the process has reaped (cutime+cstime): the tools it ran (zpool, btrfs,
# xfs_spaceman), helper processes that ended. Their CPU is fsauditd's cost as much as its own.
reaped_ticks() { awk '{print $16 + $17}' "/proc/$1/stat"; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
scrape_times() { for _ in $(seq "$SCRAPES"); do curl -s -m 30 -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$1/metrics"; done | median; }
HZ=$(getconf CLK_TCK)
metric() { awk -v n="$1" '$1 == n {print $2; f = 1} END {if (!f) print 0}'; }
# Every second: "TID TICKS" of each io_uring worker thread of $1, then "--". Workers exit after a few
# idle seconds and their time then moves to the process total, so polling often loses little.
poll_fsync_workers() {
  while kill -0 "$1" 2>/dev/null; do
    for t in /proc/"$1"/task/*; do
      read -r c 2>/dev/null <"$t/comm" || continue
      [[ $c == iou-wrk-* ]] || continue
      awk -v id="${t##*/}" '{print id, $14 + $15}' "$t/stat" 2>/dev/null || true
    done
    echo --
    sleep 1
  done
}
# Every second: "PID TICKS COMM" of each child process of $1 (fsaudit-sampler: each latency sample's
# write+fsync and the probe-file fills run there; fsaudit-statfs), then "--".
poll_children() {
  while kill -0 "$1" 2>/dev/null; do
    for k in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
      read -r c 2>/dev/null <"/proc/$k/comm" || continue
      awk -v id="$k" -v c="$c" '{print id, $14 + $15, c}' "/proc/$k/stat" 2>/dev/null || true
    done
    echo --
    sleep 1
  done
}
# Every 5 s: "VmRSS(fsauditd) VmRSS(node_exporter)" in KiB. node_exporter's RSS moves by a quarter between
# runs and within one (its garbage collector), so one reading at the window's end is a poor comparison.
poll_rss() {
  while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do
    echo "$(rss "$1") $(rss "$2")"
    sleep 5
  done
}
# "min/median/max" of column $2 of file $1.
spread() { awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{v[NR] = $1} END {if (NR) printf "%d/%d/%d", v[1], v[int((NR + 1) / 2)], v[NR]; else printf "n/a"}'; }
# Ticks the live children used inside the window: last minus first sight (0 for those born in it);
# one that ended in the window counts minus its first sight, because the reaped total (cutime) then
# holds its whole life. $2: the children alive at the end.
child_ticks() {
  awk -v alive=" $2 " '$1 == "--" {b++; next} {if (!($1 in first)) first[$1] = (b == 0 ? $2 : 0); last[$1] = $2}
       END {for (k in last) s += (index(alive, " " k " ") ? last[k] - first[k] : -first[k]); print s + 0}' "$1"
}
# The same by process name, for the children alive at the end: "NAME TICKS PROCESSES" per line.
child_ticks_by_name() {
  awk -v alive=" $2 " '$1 == "--" {b++; next} {if (!($1 in first)) first[$1] = (b == 0 ? $2 : 0); last[$1] = $2; name[$1] = $3}
       END {for (k in last) if (index(alive, " " k " ")) {t[name[k]] += last[k] - first[k]; n[name[k]]++}
            for (c in t) print c, t[c], n[c]}' "$1"
}
# Ticks those threads used inside the window: last minus first sight (0 for threads born in it).
fsync_ticks() {
  awk '$1 == "--" {b++; next} {if (!($1 in first)) first[$1] = (b == 0 ? $2 : 0); last[$1] = $2}
       END {for (t in last) s += last[t] - first[t]; print s + 0}' "$1"
}

printf '%-6s %-8s %9s %9s %9s %9s %9s %7s %10s %9s %9s %10s %9s\n' size targets "cpu_%" "child_%" "tools_%" "fsync_%" "cpu_ratio" fsyncs \
  "rss_KiB" rss_ratio "scrape_ms" scr_ratio samples >"$IMG/table"
largest=$(tr ' ' '\n' <<<"$SIZES" | sort -n | tail -1)
for size in $SIZES; do
  grow_to "$size"
  fp=$(port); np=$(port)
  mkdir -p "$IMG/state-$size"
  cat >"$IMG/fsaudit-$size.yaml" <<CFG
listen: 127.0.0.1:$fp
state_dir: $IMG/state-$size
targets:
  include: ["$ROOT/*"]
  fstypes: [ext4, xfs, btrfs, fuse.zfs]
CFG
  [ "$LATENCY" = 1 ] || printf 'latency:\n  enabled: false\n' >>"$IMG/fsaudit-$size.yaml"
  # EXTRA_CONFIG: YAML appended to fsauditd's config (e.g. a latency budget), for runs that vary a setting.
  [ -z "${EXTRA_CONFIG:-}" ] || printf '%s\n' "$EXTRA_CONFIG" >>"$IMG/fsaudit-$size.yaml"
  # The first cycle after start, on its own: every probe on every target once, then the scrape text.
  sed "s/^listen: .*/listen: 127.0.0.1:$(port)/" "$IMG/fsaudit-$size.yaml" >"$IMG/once-$size.yaml"
  /usr/bin/time -f '%e %M' -o "$IMG/once-$size.time" "$FSAUDITD" --once --config "$IMG/once-$size.yaml" \
    >/dev/null 2>"$IMG/once-$size.log" || echo "size $size: fsauditd --once failed: $IMG/once-$size.log" >&2
  read -r once_s once_kib <"$IMG/once-$size.time" || { once_s=0; once_kib=0; }
  rm -rf "$IMG/state-$size"; mkdir -p "$IMG/state-$size"
  "$FSAUDITD" --config "$IMG/fsaudit-$size.yaml" >"$IMG/fsauditd-$size.log" 2>&1 & fpid=$!; PIDS+=("$fpid")
  prometheus-node-exporter --web.listen-address=127.0.0.1:"$np" >"$IMG/ne-$size.log" 2>&1 & npid=$!; PIDS+=("$npid")
  # Scraped every 15 s like a Prometheus would: node_exporter does its work at scrape time.
  (while sleep 15; do curl -s -m 10 -o /dev/null "http://127.0.0.1:$fp/metrics"; curl -s -m 10 -o /dev/null "http://127.0.0.1:$np/metrics"; done) &
  spid=$!; PIDS+=("$spid")
  sleep "$(awk -v s="$SETTLE" -v p="$SETTLE_PER_1000" -v n="$size" 'BEGIN {printf "%d", s + p * n / 1000}')"
  text0=$(curl -s -m 30 "http://127.0.0.1:$fp/metrics") || text0=""
  q0=$(metric fsaudit_latency_fsyncs_total <<<"$text0") || q0=0
  poll_fsync_workers "$fpid" >"$IMG/fsync-workers-$size" & wpid=$!; PIDS+=("$wpid")
  poll_children "$fpid" >"$IMG/children-$size" & cpid=$!; PIDS+=("$cpid")
  poll_rss "$fpid" "$npid" >"$IMG/rss-$size" & rpid=$!; PIDS+=("$rpid")
  f0=$(cpu_ticks $fpid); n0=$(cpu_ticks $npid); r0=$(reaped_ticks $fpid)
  if [ "$PERF" = 1 ] && [ "$size" = "$largest" ] && command -v perf >/dev/null; then
    perf record -q ${PERF_ARGS:--F 199 -g} -o /var/tmp/fsaudit-scale-perf.data -p "$fpid" -- sleep "$WINDOW" >/dev/null 2>&1 || true
  else
    sleep "$WINDOW"
  fi
  f1=$(cpu_ticks $fpid); n1=$(cpu_ticks $npid); r1=$(reaped_ticks $fpid)
  alive=$(cat /proc/"$fpid"/task/*/children 2>/dev/null | tr '\n' ' ')
  stop_pid "$wpid"; stop_pid "$cpid"; stop_pid "$rpid"
  w=$(fsync_ticks "$IMG/fsync-workers-$size")
  c=$(child_ticks "$IMG/children-$size" "$alive")
  by_name=$(child_ticks_by_name "$IMG/children-$size" "$alive" |
    awk -v hz="$HZ" -v win="$WINDOW" '{printf "%s%s %.3f %% (%d process%s)", (NR > 1 ? ", " : ""), $1, 100 * $2 / hz / win, $3, ($3 == 1 ? "" : "es")}')
  frss=$(rss $fpid); nrss=$(rss $npid)
  # The children's own pages (forked from fsauditd, they share the rest with it): Private_* of each.
  kuss=0
  for k in $(cat /proc/"$fpid"/task/*/children 2>/dev/null); do
    kuss=$((kuss + $(awk '/^Private_(Clean|Dirty):/ {s += $2} END {print s + 0}' "/proc/$k/smaps_rollup" 2>/dev/null || echo 0)))
  done
  fhwm=$(awk '/^VmHWM/ {print $2}' "/proc/$fpid/status")
  # What the resident pages are: the heap and stacks (anon) or the binary and its libraries (file).
  rss_split() { awk '/^Rss(Anon|File|Shmem):/ {printf "%s%s %s", (n++ ? ", " : ""), $1, $2} END {print " KiB"}' "/proc/$1/status"; }
  fsplit=$(rss_split "$fpid"); nsplit=$(rss_split "$npid")
  if [ "${MALLOC_STATS:-0}" = 1 ] && command -v gdb >/dev/null; then
    # Both allocators' stats calls write to the daemon's stderr, its log.
    if grep -q libjemalloc "/proc/$fpid/maps"; then
      gdb -p "$fpid" -batch -ex 'call (void)malloc_stats_print(0, 0, "gmdablxeh")' >/dev/null 2>&1 || true
      echo "size $size: fsauditd's heap (jemalloc: allocated = live, resident = held in RAM, metadata its own): $(grep '^Allocated:' "$IMG/fsauditd-$size.log" | tail -1)" >&2
    else
      gdb -p "$fpid" -batch -ex 'call (void)malloc_stats()' >/dev/null 2>&1 || true
      echo "size $size: fsauditd's heap (glibc malloc_stats: system = held, in use = live): $(grep -A2 '^Total (incl. mmap)' "$IMG/fsauditd-$size.log" | tail -2 | tr -s ' \n' ' ')" >&2
    fi
  fi
  fsec=$(scrape_times "$fp"); nsec=$(scrape_times "$np")
  # A scrape that fails (node_exporter stuck in statfs on a stalled FUSE mount) is reported, not fatal.
  ftext=$(curl -s -m 30 "http://127.0.0.1:$fp/metrics") || echo "size $size: fsauditd scrape failed" >&2
  ntext=$(curl -s -m 30 "http://127.0.0.1:$np/metrics") || echo "size $size: node_exporter scrape failed" >&2
  q1=$(metric fsaudit_latency_fsyncs_total <<<"$ftext")
  fsamples=$(grep -vc '^#' <<<"$ftext"); nsamples=$(grep -vc '^#' <<<"$ntext")
  targets=$(awk '/^fsaudit_targets / {print $2}' <<<"$ftext")
  stuck=$(grep -c '^fsaudit_probe_stuck' <<<"$ftext" || true)
  samplers=$(metric fsaudit_latency_samplers <<<"$ftext")
  for p in "$spid" "$fpid" "$npid"; do stop_pid "$p"; done
  PIDS=()
  awk -v s="$size" -v t="$targets" -v f="$((f1 - f0))" -v n="$((n1 - n0))" -v hz="$HZ" -v win="$WINDOW" -v w="$w" -v c="$c" \
    -v r="$((r1 - r0))" \
    -v q="$(awk -v a="$q0" -v b="$q1" 'BEGIN {print b - a}')" \
    -v fr="$frss" -v nr="$nrss" -v fs="$fsec" -v ns="$nsec" -v fc="$fsamples" -v nc="$nsamples" 'BEGIN {
    ccpu = 100 * (c + r) / hz / win; tcpu = 100 * r / hz / win; fcpu = 100 * f / hz / win + ccpu
    ncpu = 100 * n / hz / win; wcpu = 100 * w / hz / win
    printf "%-6s %-8s %9.3f %9.3f %9.3f %9.3f %9s %7d %10d %9.2f %9.2f %10.2f %9d\n", s, t, fcpu, ccpu, tcpu, wcpu,
      (ncpu > 0 ? sprintf("%.2f", fcpu / ncpu) : "n/a"), q, fr, fr / nr, fs * 1000, fs / ns, fc
    printf "%-6s %-8s %9.3f %9s %9s %9s %9s %7s %10d %9s %9.2f %10s %9d\n", "", "(n_e)", ncpu, "", "", "", "", "", nr, "", ns * 1000, "", nc
  }' >>"$IMG/table"
  # Raw figures of the size, for the per-filesystem table: targets, CPU % (fsauditd, n_e), RSS KiB (the
  # median over the window: node_exporter's moves with its garbage collector), scrape ms, samples.
  col_median() { awk -v c="$2" '{print $c}' "$1" | sort -n | awk -v d="$3" '{v[NR] = $1} END {print (NR ? v[int((NR + 1) / 2)] : d)}'; }
  awk -v s="$size" -v t="${targets:-0}" -v f="$((f1 - f0))" -v c="$c" -v r="$((r1 - r0))" -v n="$((n1 - n0))" -v hz="$HZ" \
    -v win="$WINDOW" -v fr="$(col_median "$IMG/rss-$size" 1 "$frss")" -v nr="$(col_median "$IMG/rss-$size" 2 "$nrss")" -v fs="$fsec" -v ns="$nsec" -v fc="$fsamples" -v nc="$nsamples" \
    -v os="$once_s" -v ok="$once_kib" 'BEGIN {
    printf "%s %s %.4f %.4f %d %d %.3f %.3f %d %d %s %d\n", s, t, 100 * (f + c + r) / hz / win, 100 * n / hz / win, fr, nr,
      fs * 1000, ns * 1000, fc, nc, os, ok }' >>"$IMG/raw"
  echo "size $size done (fsauditd samples/target: $(( fsamples / ${targets:-1} )), latency samplers: $samplers, stuck jobs: $stuck, fsauditd peak RSS ${fhwm} KiB, child processes' private memory ${kuss} KiB)" >&2
  echo "size $size: live children's CPU in the window by name (% of one core): ${by_name:-none}" >&2
  echo "size $size: resident memory: fsauditd ${fsplit}; node_exporter ${nsplit}" >&2
  echo "size $size: RSS over the window, every 5 s (min/median/max KiB): fsauditd $(spread "$IMG/rss-$size" 1), node_exporter $(spread "$IMG/rss-$size" 2)" >&2
  # Where the daemon's time goes, by probe: runs a second and the time inside them (wall time of the runs,
  # % of one core; a run that waits on a tool or the kernel counts its wait) over the window, from its own counters.
  by_probe=$( { sed 's/^/0 /' <<<"$text0"; sed 's/^/1 /' <<<"$ftext"; } |
    awk -v win="$WINDOW" '$2 ~ /^fsaudit_probe_(runs|duration_seconds)_total\{/ {
      match($2, /probe="[^"]*"/); p = substr($2, RSTART + 7, RLENGTH - 8); k = ($2 ~ /runs_total/) ? "r" : "d"
      v[$1, k, p] = $3; seen[p] = 1 }
      END { for (p in seen) printf "%s %.2f %.3f\n", p, (v[1, "r", p] - v[0, "r", p]) / win, 100 * (v[1, "d", p] - v[0, "d", p]) / win }' |
    sort -k3,3nr | awk '{printf "%s%s %s/s %s %%", (NR > 1 ? ", " : ""), $1, $2, $3}')
  echo "size $size: probe runs in the window (runs a second, time in runs as % of one core): ${by_probe:-none}" >&2
  if [ "$HEAP" = 1 ] && [ "$size" = "$largest" ]; then
    rm -f /var/tmp/fsaudit-scale-heap.*
    sed -i "s/^listen: .*/listen: 127.0.0.1:$(port)/" "$IMG/fsaudit-$size.yaml"
    heaptrack -o /var/tmp/fsaudit-scale-heap "$FSAUDITD" --once --config "$IMG/fsaudit-$size.yaml" \
      >"$IMG/heaptrack.log" 2>&1 || echo "size $size: fsauditd --once under heaptrack failed: $IMG/heaptrack.log" >&2
    heap=$(ls /var/tmp/fsaudit-scale-heap*.zst /var/tmp/fsaudit-scale-heap*.gz 2>/dev/null | head -1 || true)
    if [ -n "$heap" ]; then
      heaptrack_print -f "$heap" -p 1 -a 0 -T 0 -l 0 -n 15 -s 3 >/var/tmp/fsaudit-scale-heap.txt 2>&1 || true
      echo "size $size: heap of fsauditd --once under heaptrack (data $heap, top 15 sites at the peak in /var/tmp/fsaudit-scale-heap.txt):" >&2
      grep -E '^(peak heap memory consumption|peak RSS|total memory leaked|calls to allocation)' /var/tmp/fsaudit-scale-heap.txt >&2 || true
    fi
  fi
  if [ "$HEAP_LIVE" = 1 ] && [ "$size" = "$largest" ]; then
    rm -rf /var/tmp/fsaudit-scale-live.* "$IMG/state-$size"; mkdir -p "$IMG/state-$size"
    sed -i "s/^listen: .*/listen: 127.0.0.1:$(port)/" "$IMG/fsaudit-$size.yaml"
    heaptrack -o /var/tmp/fsaudit-scale-live "$FSAUDITD" --config "$IMG/fsaudit-$size.yaml" >"$IMG/heaptrack-live.log" 2>&1 &
    hpid=$!; PIDS+=("$hpid")
    sleep "$SETTLE"
    dpid=$(pgrep -n -f "^$FSAUDITD --config $IMG/fsaudit-$size.yaml" || true)
    [ -n "$dpid" ] && echo "size $size: fsauditd under heaptrack after ${SETTLE}s: RSS $(rss "$dpid") KiB (heaptrack's own hooks included)" >&2
    # What it serves at that moment, beside the heap: the sample text the store holds, to compare with
    # what the heap shows of it.
    hport=$(sed -n 's/^listen: 127.0.0.1://p' "$IMG/fsaudit-$size.yaml")
    curl -s -m 30 -o /var/tmp/fsaudit-scale-live.metrics "http://127.0.0.1:$hport/metrics" || true
    [ -s /var/tmp/fsaudit-scale-live.metrics ] && echo "size $size: its exposition then: $(wc -c </var/tmp/fsaudit-scale-live.metrics) bytes, $(grep -vc '^#' /var/tmp/fsaudit-scale-live.metrics) samples (/var/tmp/fsaudit-scale-live.metrics)" >&2
    [ -n "$dpid" ] && kill -9 "$dpid"
    wait "$hpid" 2>/dev/null || true
    PIDS=()
    heap=$(ls /var/tmp/fsaudit-scale-live*.zst /var/tmp/fsaudit-scale-live*.gz 2>/dev/null | head -1 || true)
    if [ -n "$heap" ]; then
      heaptrack_print -f "$heap" -p 0 -a 0 -T 0 -l 1 -n 40 -s 5 >/var/tmp/fsaudit-scale-live.txt 2>&1 || true
      echo "size $size: live heap of the daemon after ${SETTLE}s (data $heap, sites in /var/tmp/fsaudit-scale-live.txt):" >&2
      grep -E '^(peak heap memory consumption|total memory leaked)' /var/tmp/fsaudit-scale-live.txt >&2 || true
    fi
  fi
done
echo "window ${WINDOW}s after ${SETTLE}s settle; cpu_% = user+system of the process and all its child processes over"
echo "the window, % of one core, fsync work included; child_% = the part in its children: the helpers (fsaudit-sampler,"
echo "where each sample's write+fsync and the probe-file fills run, and fsaudit-statfs) and the tools it ran;"
echo "tools_% = the part of child_% in children reaped in the window (the tools: zpool, btrfs, xfs_spaceman; helpers"
echo "that ended); fsync_% = the part in io_uring workers;"
echo "fsyncs = write+fsync operations fsauditd issued in the window (fsaudit_latency_fsyncs_total)."
echo "rows '(n_e)' are prometheus-node-exporter in the same run; ratios are fsauditd / node_exporter."
[ "$LATENCY" = 1 ] || echo "latency sampler disabled (LATENCY=0): no fsync is issued by fsauditd in this run."
cat "$IMG/table"
echo
echo "cost per filesystem: growth over the smallest size of the run / filesystems added (fsauditd, node_exporter,"
echo "fsauditd/node_exporter; the smallest size's row: samples / targets; RSS from each size's median over the"
echo "window); first cycle = fsauditd --once before that size's daemon."
awk 'NR == 1 {t0 = $2; fc0 = $3; nc0 = $4; fr0 = $5; nr0 = $6; fs0 = $7; ns0 = $8; sc0 = $9; sn0 = $10}
  {rows[NR] = $0; n = NR}
  END {
    printf "%-6s %-8s %9s %9s %6s %10s %10s %6s %10s %10s %8s %8s %10s %12s\n", "size", "targets", "rss_KiB/fs", "(n_e)", "ratio",
      "series/fs", "(n_e)", "ratio", "cpu_%/kfs", "(n_e)", "scr_us/fs", "(n_e)", "1st_cyc_s", "1st_peak_KiB"
    for (i = 1; i <= n; i++) {
      split(rows[i], a, " "); d = a[2] - t0
      rf = (d > 0 ? (a[5] - fr0) / d : 0); rn = (d > 0 ? (a[6] - nr0) / d : 0)
      cf = (d > 0 ? 1000 * (a[3] - fc0) / d : 0); cn = (d > 0 ? 1000 * (a[4] - nc0) / d : 0)
      sf = (d > 0 ? 1000 * (a[7] - fs0) / d : 0); sn = (d > 0 ? 1000 * (a[8] - ns0) / d : 0)
      printf "%-6s %-8s %9s %9s %6s %10.1f %10.1f %6.2f %10s %10s %8s %8s %10s %12d\n", a[1], a[2],
        (d > 0 ? sprintf("%.2f", rf) : "-"), (d > 0 ? sprintf("%.2f", rn) : "-"), (d > 0 && rn > 0 ? sprintf("%.2f", rf / rn) : "-"),
        (d > 0 ? (a[9] - sc0) / d : a[9] / (a[2] > 0 ? a[2] : 1)), (d > 0 ? (a[10] - sn0) / d : a[10] / (a[2] > 0 ? a[2] : 1)),
        (d > 0 && a[10] > sn0 ? (a[9] - sc0) / (a[10] - sn0) : (a[10] > 0 ? a[9] / a[10] : 0)),
        (d > 0 ? sprintf("%.3f", cf) : "-"), (d > 0 ? sprintf("%.3f", cn) : "-"),
        (d > 0 ? sprintf("%.2f", sf) : "-"), (d > 0 ? sprintf("%.2f", sn) : "-"), a[11], a[12]
    }
  }' "$IMG/raw"
if [ "$PERF" = 1 ] && [ -s /var/tmp/fsaudit-scale-perf.data ]; then
  echo "perf (fsauditd, size $largest, self time): perf report -i /var/tmp/fsaudit-scale-perf.data"
  perf report -i /var/tmp/fsaudit-scale-perf.data --stdio --no-children --sort symbol 2>/dev/null | grep -E '^ +[0-9]' | head -25
fi
