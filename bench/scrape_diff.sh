#!/bin/bash
# What a change does to the scrape: two fsauditd binaries (before, after) each run `--once` with the same
# configuration on the same small lab (loop-device ext4, XFS, btrfs raid1, and a zfs-fuse mirror pool with
# one dataset when zfs-fuse is installed), and this prints the series each scrape has that the other has
# not, by name and labels (values are left out: they move between two runs), then a count per family.
#
# usage: bench/scrape_diff.sh BEFORE_FSAUDITD AFTER_FSAUDITD [EXTRA_CONFIG_YAML]
#
# `--once` runs every probe once and then the probes that read other probes' saved state (setup) again,
# so two runs of one binary give the same series but for what depends on timing within the run (the
# latency sampler's io_budget skips): run it with one binary twice first to see that noise.
#
# Root only. Everything it creates (images, loop devices, mounts, the pool) is under a temporary
# directory and removed on exit, also when it fails; zfs-fuse is started only if it was not running,
# and stopped again then.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BEFORE_FSAUDITD AFTER_FSAUDITD [EXTRA_CONFIG_YAML]" >&2; exit 2; }
before=$(readlink -f "$1") after=$(readlink -f "$2") extra=${3:-}
[ "$(id -u)" = 0 ] || { echo "$0: needs root (loop devices, mounts)" >&2; exit 2; }
for b in "$before" "$after"; do [ -x "$b" ] || { echo "$0: $b is not an executable" >&2; exit 2; }; done

dir=$(mktemp -d /tmp/fsaudit-scrape-diff.XXXXXX)
loops=() mounts=() pool="" started_zfs=0
cleanup() {
  set +e
  [ -n "$pool" ] && zpool destroy -f "$pool" >/dev/null 2>&1
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}"; done
  for l in "${loops[@]}"; do losetup -d "$l"; done
  if [ "$started_zfs" = 1 ]; then  # and wait: a zfs-fuse still exiting would fail the next run's pool
    pkill -x zfs-fuse
    for _ in $(seq 50); do pgrep -x zfs-fuse >/dev/null || break; sleep 0.2; done
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
loop() {  # NAME SIZE: attaches a loop device, sets $dev (not by $(...): its subshell would lose loops)
  truncate -s "$2" "$dir/$1.img"
  dev=$(losetup -f --show "$dir/$1.img"); loops+=("$dev")
}
mnt() { mkdir -p "$2"; mount "$1" "$2"; mounts+=("$2"); }

loop ext4 64M; mkfs.ext4 -q -F "$dev"; mnt "$dev" "$dir/mnt/ext4"
loop xfs 300M; mkfs.xfs -q -f "$dev"; mnt "$dev" "$dir/mnt/xfs"
loop btrfs1 128M; b1=$dev; loop btrfs2 128M; b2=$dev
mkfs.btrfs -q -f -d raid1 -m raid1 "$b1" "$b2" >/dev/null; mnt "$b1" "$dir/mnt/btrfs"
fstypes="ext4, xfs, btrfs"
if command -v zfs-fuse >/dev/null; then
  if ! pgrep -x zfs-fuse >/dev/null; then zfs-fuse; started_zfs=1; sleep 1; fi
  truncate -s 128M "$dir/v1" "$dir/v2"
  pool="fsauditdiff$$"
  zpool create -f -m "$dir/mnt/zfs" "$pool" mirror "$dir/v1" "$dir/v2" 2>/dev/null
  zfs create "$pool/d0"
  fstypes="$fstypes, fuse.zfs"
fi

cat >"$dir/fsaudit.yaml" <<EOF
listen: 127.0.0.1:$(( 20000 + $$ % 20000 ))
state_dir: $dir/state
dbus_address: none
targets:
  include: ["$dir/mnt/*"]
  fstypes: [$fstypes]
$extra
EOF
# One line per series: name{labels}, labels sorted; the temporary directory's name made constant.
series() {
  "$1" --once --config "$dir/fsaudit.yaml" | grep -v '^#' | grep -v '^$' |
    sed -E "s#$dir#DIR#g; s/$pool/POOL/g; s/ [^ ]+( [0-9]+)?\$//" | sort -u
}
mkdir -p "$dir/state"
series "$before" >"$dir/before.txt"
rm -rf "$dir/state"; mkdir -p "$dir/state"
series "$after" >"$dir/after.txt"
fam() { sed -E 's/[{ ].*//; s/_(bucket|sum|count)$//' "$1" | sort | uniq -c | awk '{print $2, $1}'; }
echo "== series only before ($(comm -23 "$dir/before.txt" "$dir/after.txt" | wc -l)):"
comm -23 "$dir/before.txt" "$dir/after.txt"
echo "== series only after ($(comm -13 "$dir/before.txt" "$dir/after.txt" | wc -l)):"
comm -13 "$dir/before.txt" "$dir/after.txt"
echo "== per family: before after"
join -a1 -a2 -e 0 -o 0,1.2,2.2 <(fam "$dir/before.txt") <(fam "$dir/after.txt") | awk '$2 != $3'
echo "== total: $(wc -l <"$dir/before.txt") before, $(wc -l <"$dir/after.txt") after"
