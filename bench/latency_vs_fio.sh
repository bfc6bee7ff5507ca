#!/usr/bin/env bash
# Compares the fsync latency the fsaudit sampler measures with fio's, in one run on one filesystem.
#
#   bench/latency_vs_fio.sh [PATH]
#
# Without PATH: creates a 512 MiB ext4 on a loop device (root needed), runs there, removes it.
# With PATH: an existing directory on the filesystem to measure (a subdirectory .fsaudit-bench is
# created there and removed at the end).
# Environment: N (samples, default 2000), SIZE_MIB (probe/fio file size, default 64),
#   MODE (sampler: io_uring_fsync | o_dsync, default io_uring_fsync), ENGINE (fio: io_uring | psync,
#   default io_uring), ROUNDS (alternating sampler/fio rounds, default 2),
#   SAMPLER (path of fsaudit-latency-sample, default: found under build*/).
# Both use the same file: 4 KiB writes at random aligned offsets, each followed by fsync, queue depth 1.
# The sampler times write+fsync as one operation; fio reports the write (clat) and the fsync (sync lat)
# separately, so the fio reference for a quantile is write_pX + sync_pX (sync-only ratios printed too).
set -euo pipefail

N=${N:-2000}
SIZE_MIB=${SIZE_MIB:-64}
MODE=${MODE:-io_uring_fsync}
ENGINE=${ENGINE:-io_uring}
ROUNDS=${ROUNDS:-2}
HERE=$(cd "$(dirname "$0")/.." && pwd)

SAMPLER=${SAMPLER:-}
if [[ -z "$SAMPLER" ]]; then
  for c in "$HERE"/build*/probes/latency/fsaudit-latency-sample; do
    [[ -x "$c" ]] && SAMPLER=$c && break
  done
fi
[[ -x "${SAMPLER:-}" ]] || { echo "fsaudit-latency-sample not found: build target fsaudit-latency-sample or set SAMPLER" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio not installed (apt-get install fio)" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq not installed (apt-get install jq)" >&2; exit 2; }

WORK=$(mktemp -d /tmp/fsaudit-latency-bench.XXXXXX)
LOOP=""
MNT=""
cleanup() {
  set +e
  [[ -n "${BENCH_DIR:-}" ]] && rm -rf "$BENCH_DIR"
  if [[ -n "$MNT" ]]; then umount "$MNT"; fi
  if [[ -n "$LOOP" ]]; then losetup -d "$LOOP"; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

if [[ $# -ge 1 ]]; then
  TARGET=$(cd "$1" && pwd)
  WHAT="$TARGET ($(stat -f -c %T "$TARGET"))"
else
  [[ $(id -u) -eq 0 ]] || { echo "creating a loop-device ext4 needs root; or pass a directory" >&2; exit 2; }
  truncate -s 512M "$WORK/ext4.img"
  LOOP=$(losetup -f --show "$WORK/ext4.img")
  mkfs.ext4 -q -F "$LOOP"
  MNT="$WORK/mnt"
  mkdir -p "$MNT"
  mount -t ext4 "$LOOP" "$MNT"
  TARGET=$MNT
  WHAT="ext4 on $LOOP (512 MiB image in $WORK, backing fs $(stat -f -c %T "$WORK"))"
fi
BENCH_DIR="$TARGET/.fsaudit-bench"
FILE="$BENCH_DIR/latency.probe"

echo "# latency_vs_fio: $WHAT; N=$N samples, file ${SIZE_MIB} MiB, sampler mode $MODE, fio ioengine=$ENGINE"
echo "# kernel $(uname -r), $(nproc) CPUs, fio $(fio --version)"

# Warm-up: creates and preallocates the file both tools use.
"$SAMPLER" --dir "$BENCH_DIR" --samples 50 --size "${SIZE_MIB}MiB" --mode "$MODE" --keep >/dev/null
# Let the fill's writeback finish everywhere (the loop device's image lives in the host's page cache).
sync; sleep 3

fio_pct() {  # json section percentile -> milliseconds
  jq -r --arg p "$3" ".jobs[0].$2.percentile[\$p] / 1e6" "$1"
}

printf '%-6s %-10s %10s %10s %10s %10s\n' round tool p50_ms p99_ms p999_ms cpu_ms/1000
declare -a S50 S99 F50 F99 FS50 FS99 CPU
run_sampler() {
  out=$("$SAMPLER" --dir "$BENCH_DIR" --samples "$N" --size "${SIZE_MIB}MiB" --mode "$MODE" --keep)
  get() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$out"; }
  S50[$r]=$(get p50_ms); S99[$r]=$(get p99_ms); CPU[$r]=$(get cpu_ms_per_1000)
  printf '%-6s %-10s %10s %10s %10s %10s\n' "$r" sampler "${S50[$r]}" "${S99[$r]}" "$(get p999_ms)" "${CPU[$r]}"
}
run_fio() {
  fio --name=fsync4k --filename="$FILE" --size="${SIZE_MIB}m" --rw=randwrite --bs=4k --fsync=1 \
      --ioengine="$ENGINE" --iodepth=1 --direct=0 --number_ios="$N" --randrepeat=0 --norandommap \
      --percentile_list=50:99:99.9 --output-format=json --output="$WORK/fio.json" >/dev/null
  w50=$(fio_pct "$WORK/fio.json" write.clat_ns 50.000000); w99=$(fio_pct "$WORK/fio.json" write.clat_ns 99.000000)
  s50=$(fio_pct "$WORK/fio.json" sync.lat_ns 50.000000); s99=$(fio_pct "$WORK/fio.json" sync.lat_ns 99.000000)
  s999=$(fio_pct "$WORK/fio.json" sync.lat_ns 99.900000)
  F50[$r]=$(awk -v a="$w50" -v b="$s50" 'BEGIN{printf "%.4f", a+b}')
  F99[$r]=$(awk -v a="$w99" -v b="$s99" 'BEGIN{printf "%.4f", a+b}')
  FS50[$r]=$s50; FS99[$r]=$s99
  printf '%-6s %-10s %10s %10s %10s %10s\n' "$r" fio "${F50[$r]}" "${F99[$r]}" "$s999(sync)" "-"
  echo "       fio detail: write clat p50 ${w50} ms p99 ${w99} ms; fsync p50 ${s50} ms p99 ${s99} ms"
}
# Odd rounds: sampler first; even rounds: fio first (so neither always runs on a warmer file).
for r in $(seq 1 "$ROUNDS"); do
  if (( r % 2 )); then run_sampler; run_fio; else run_fio; run_sampler; fi
done

echo
echo "ratios sampler / fio (goal 0.8-1.25):"
for r in $(seq 1 "$ROUNDS"); do
  awk -v r="$r" -v s50="${S50[$r]}" -v s99="${S99[$r]}" -v f50="${F50[$r]}" -v f99="${F99[$r]}" \
      -v g50="${FS50[$r]}" -v g99="${FS99[$r]}" -v cpu="${CPU[$r]}" 'BEGIN{
    p50=s50/f50; p99=s99/f99;
    printf "round %s: p50 %.3f  p99 %.3f  (vs fio fsync only: p50 %.3f p99 %.3f)  %s; sampler CPU %s ms per 1000 samples\n",
      r, p50, p99, s50/g50, s99/g99, (p50>=0.8 && p50<=1.25 && p99>=0.8 && p99<=1.25) ? "within goal" : "OUTSIDE goal", cpu }'
done
