#!/usr/bin/env bash
# Retrain every router on the installed experts (the expert set changed), one after another.
# TASKS="push reach" limits it to those tasks.
set -u
cd "$(dirname "$0")/.."
mkdir -p runs
for task in ${TASKS:-door push reach stand sit run fetch}; do
  echo "=== $task $(date -u +%H:%M:%S)"
  metaworld-x train router --task "$task" --ablations --run-dir runs/router_all > "runs/router_all_$task.log" 2>&1
  echo "rc $? $(date -u +%H:%M:%S)"
  tail -c 400 "runs/router_all_$task.log"; echo
done
