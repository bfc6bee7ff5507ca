#!/bin/bash
# Resident memory after an idle minute and median /metrics scrape time: fsauditd vs Debian's
# prometheus-node-exporter, side by side on this machine in one run.
# usage: bench/daemon_vs_node_exporter.sh [FSAUDITD] [IDLE_SECONDS] [SCRAPES]
set -euo pipefail
cd "$(dirname "$0")/.."
FSAUDITD=${1:-build/daemon/fsauditd}
IDLE=${2:-60}
N=${3:-200}
command -v prometheus-node-exporter >/dev/null || apt-get install -y -q prometheus-node-exporter >/dev/null
# The packaged service may already run on :9100; ours uses free ports of its own.
tmp=$(mktemp -d)
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"; }
pids=()
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fp=$(port); np=$(port)
cat > "$tmp/fsaudit.yaml" <<CFG
listen: 127.0.0.1:$fp
state_dir: $tmp/state
CFG
"$FSAUDITD" --config "$tmp/fsaudit.yaml" >"$tmp/fsauditd.log" 2>&1 & pids+=($!); fpid=$!
prometheus-node-exporter --web.listen-address=127.0.0.1:$np >"$tmp/ne.log" 2>&1 & pids+=($!); npid=$!
sleep 3
curl -sf "http://127.0.0.1:$fp/metrics" >/dev/null && curl -sf "http://127.0.0.1:$np/metrics" >/dev/null
echo "idle for ${IDLE}s (both scraped once)..."
sleep "$IDLE"
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
frss=$(rss $fpid); nrss=$(rss $npid)
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
scrape() { for _ in $(seq "$N"); do curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$1/metrics"; done | median; }
fsec=$(scrape $fp); nsec=$(scrape $np)
fseries=$(curl -s "http://127.0.0.1:$fp/metrics" | grep -vc '^#'); nseries=$(curl -s "http://127.0.0.1:$np/metrics" | grep -vc '^#')
printf '%-22s %12s %16s %10s\n' "" "RSS (KiB)" "median scrape (s)" "series"
printf '%-22s %12s %16s %10s\n' "fsauditd" "$frss" "$fsec" "$fseries"
printf '%-22s %12s %16s %10s\n' "node_exporter" "$nrss" "$nsec" "$nseries"
awk -v a="$frss" -v b="$nrss" -v c="$fsec" -v d="$nsec" 'BEGIN {
  printf "RSS ratio fsauditd/node_exporter: %.2f (goal <= 0.60)\n", a/b;
  printf "scrape time ratio fsauditd/node_exporter: %.2f (goal <= 1.00)\n", c/d }'
