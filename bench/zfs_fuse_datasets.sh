#!/bin/bash
# How many datasets zfs-fuse holds on this machine (issue 33: where it stops short of 10,000), within
# a time cap: one pool on a 2 GiB sparse file, `zfs create` (each mounted) until an error or the cap;
# every 250: elapsed seconds, zfs-fuse's RSS, the pool's mounts. Root only. Starts zfs-fuse when none
# runs (and stops it after); destroys the pool and removes its files on exit.
# usage: CAP=600 bench/zfs_fuse_datasets.sh
set -u
CAP=${CAP:-600}
dir=$(mktemp -d /tmp/zfslimit.XXXXXX)
truncate -s 2G "$dir/pool.img"
started=0
if ! zpool list -H >/dev/null 2>&1; then
  zfs-fuse --no-kstat-mount >/dev/null 2>&1; started=1
  for i in $(seq 50); do zpool list -H >/dev/null 2>&1 && break; sleep 0.2; done
fi
pool=fszlimit$$
cleanup() {
  zpool destroy -f "$pool" >/dev/null 2>&1
  [ "$started" = 1 ] && { pkill -x zfs-fuse; sleep 2; }
  rm -rf "$dir"
}
trap cleanup EXIT
zpool create -f -m "$dir/mnt" "$pool" "$dir/pool.img" || exit 1
t0=$SECONDS; n=0; why="time cap ${CAP} s"
while [ $((SECONDS - t0)) -lt "$CAP" ]; do
  if ! out=$(zfs create "$pool/d$n" 2>&1); then why="zfs create d$n failed: $out"; break; fi
  n=$((n + 1))
  if [ $((n % 250)) = 0 ]; then
    rss=$(ps -o rss= -C zfs-fuse | head -1)
    echo "$n datasets, $((SECONDS - t0)) s, zfs-fuse RSS ${rss} KiB, mounts $(grep -c " $dir/mnt" /proc/mounts)"
  fi
done
rss=$(ps -o rss= -C zfs-fuse | head -1)
echo "end: $n datasets in $((SECONDS - t0)) s ($why); zfs-fuse RSS ${rss} KiB; mounts $(grep -c " $dir/mnt" /proc/mounts)"
t1=$SECONDS; zfs list -H -o name -r "$pool" | wc -l | sed 's/^/zfs list: /'; echo "zfs list took $((SECONDS - t1)) s"
