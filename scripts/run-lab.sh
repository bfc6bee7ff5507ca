#!/bin/bash
# The README's run command: installs what is needed, builds, and runs fsauditd in the foreground with
# a lab of loop-device canaries (config/lab.yaml) next to a throw-away local Prometheus on
# 127.0.0.1:9090 that evaluates the shipped alert rules. Ctrl-C stops both; the lab's loop devices,
# mounts and pools are removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "run-lab.sh: run as root (the lab creates loop devices and mounts filesystems)" >&2
  exit 1
fi
sh scripts/install-deps.sh
sh scripts/build.sh
# Debian's prometheus package starts its own server on :9090 where systemd runs: use the next free port.
port=9090
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
echo "fsauditd: http://127.0.0.1:9717/metrics   Prometheus: http://127.0.0.1:$port/alerts"
exec bash scripts/lab-prometheus.sh --port "$port" -- build/daemon/fsauditd --config config/lab.yaml "$@"
