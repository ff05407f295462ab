#!/usr/bin/env bash
# Retrain every router on the installed experts (the expert set changed), one after another.
# TASKS="push reach" limits it to those tasks; ABLATIONS="door push" trains the ablation variants for those
# tasks only (about 2x a task's time; default: every task), ABLATIONS="" for none.
set -u
cd "$(dirname "$0")/.."
mkdir -p runs
all="door push reach stand sit run fetch crawl"
tasks="${TASKS:-$all}"
ablations=" ${ABLATIONS-$tasks} "
for task in $tasks; do
  flag=--no-ablations
  [[ "$ablations" == *" $task "* ]] && flag=--ablations
  echo "=== $task $flag $(date -u +%H:%M:%S)"
  metaworld-x train router --task "$task" "$flag" --run-dir runs/router_all > "runs/router_all_$task.log" 2>&1
  echo "rc $? $(date -u +%H:%M:%S)"
  tail -c 400 "runs/router_all_$task.log"; echo
done
