#!/usr/bin/env bash
# The checks that need a GPU, in one pass, for a machine lent for minutes:
#   1. `metaworld-x info` (versions, the JAX devices);
#   2. the walk expert trained on the mjx backend from scratch for WALK_MINUTES (default 6) from the command's
#      start, compilation included and uncached, keeping a checkpoint every 25 iterations (goal: the quality
#      goals within 3 minutes on one H200);
#   3. scripts/time_to_goal.py on that run: each checkpoint evaluated on the C engine as `eval expert` does,
#      with the wall clock at which it was written, so the table says when the goals were first met;
#   4. scripts/bench_train.py on mjx, with brax's ppo.train beside it;
#   5. scripts/bench_env.py's mjx rows;
#   6. the MJX tests.
#
#   bash scripts/gpu_checks.sh OUT_DIR [ENVS] [MINIBATCHES] [UNROLL]
#
# ENVS, MINIBATCHES and UNROLL (the walk run's steps per simulation per iteration) default to 8192, 16 and 5:
# the spec's minibatch of 2,560 samples and its 40,960 per iteration, in the most worlds. On one H200 (4 Dec 2026)
# the walk spec met its goals after 8.2M steps at 2048 x 20 (5.4 min); on the CPU, 8192 x 5 met them at 9.0M,
# and the H200 steps 8192 worlds 1.8 times as fast as 2048 (README, Performance). `OUT 2048 16 20` repeats that run.
# Each stage runs under its own time limit (seconds, overridable through
# LIMIT_<STAGE>) and writes OUT_DIR/<stage>.log; a stage that fails or runs out
# of time does not stop the next. OUT_DIR/stages.txt lists each stage's exit
# status and seconds. Stages run in order of what they are worth, so a short
# lease keeps the most important figures. With ARCHIVE=path.tar.gz set, OUT_DIR
# is packed there after every stage (atomically), for machines that hand back
# only a few files. WALK_STEPS overrides the walk run's step budget, GOAL_FROM_STEP the first checkpoint
# that time_to_goal evaluates.
set -u
out=${1:?usage: gpu_checks.sh OUT_DIR [ENVS] [MINIBATCHES] [UNROLL]}
envs=${2:-8192}
minibatches=${3:-16}
unroll=${4:-5}  # 8192 worlds x 5 steps / 16 = 2560 samples per minibatch, as the spec's 1024 x 20 / 8
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# the scripts import metaworld_x from this checkout, installed or not (a lent machine gets the tree, not a wheel)
export PYTHONPATH="$(cd "$(dirname "$0")/.." && pwd)${PYTHONPATH:+:$PYTHONPATH}"
# bench_train starts brax's trainer in a second process: neither may take most of the GPU's memory up front
export XLA_PYTHON_CLIENT_PREALLOCATE=${XLA_PYTHON_CLIENT_PREALLOCATE:-false}
runs=$(mktemp -d)

pack() {  # OUT_DIR into $ARCHIVE, if set, atomically
  if [ -n "${ARCHIVE:-}" ]; then
    tar czf "$ARCHIVE.tmp" -C "$out" . && mv "$ARCHIVE.tmp" "$ARCHIVE"
  fi
}

stage() {  # stage NAME LIMIT COMMAND...; a limit of 0 skips the stage
  local name=$1 limit=$2 start=$SECONDS rc
  shift 2
  [ "$limit" = 0 ] && { echo "$name: skipped" | tee -a "$out/stages.txt"; return 0; }
  timeout --signal=INT --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  echo "$name: exit $rc after $((SECONDS - start)) s (limit $limit s)" | tee -a "$out/stages.txt"
  pack
  return 0
}

stage info "${LIMIT_INFO:-60}" bash -c "nvidia-smi; python3 -m metaworld_x.cli info"

stage walk "${LIMIT_WALK:-420}" python3 -m metaworld_x.cli train expert walk --backend mjx \
  --num-envs "$envs" --num-minibatches "$minibatches" --eval-every 0 --no-ship --max-minutes "${WALK_MINUTES:-6}" \
  --total-env-steps "${WALK_STEPS:-60000000}" --unroll-length "$unroll" --run-dir "$runs/walk"
# the run's scalars (throughput per iteration, returns, λ, setup time) without the checkpoints
mkdir -p "$out/walk_mjx" && cp "$runs"/walk/*.jsonl "$runs"/walk/curve.png "$out/walk_mjx/" 2>/dev/null
pack
tail -c 400 "$out/walk.log" 2>/dev/null | tr '\r' '\n' | tail -3

stage time_to_goal "${LIMIT_TIME_TO_GOAL:-150}" python3 scripts/time_to_goal.py "$runs/walk" --from-step "${GOAL_FROM_STEP:-4000000}"
tail -4 "$out/time_to_goal.log" 2>/dev/null

# Later stages reuse what earlier ones compiled (bench_train's collector and update, the MJX step).
export JAX_COMPILATION_CACHE_DIR=${JAX_COMPILATION_CACHE_DIR:-/tmp/metaworld_x_jax_cache}
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=1

stage bench_train "${LIMIT_BENCH_TRAIN:-170}" python3 scripts/bench_train.py --backend mjx --envs "$envs" \
  --minibatches "$minibatches" --iterations 3 --brax
tail -8 "$out/bench_train.log" 2>/dev/null

stage bench_env "${LIMIT_BENCH_ENV:-100}" python3 scripts/bench_env.py --mjx-only --seconds 3 \
  --mjx-worlds 1024 "$envs" 16384
tail -6 "$out/bench_env.log" 2>/dev/null

stage tests "${LIMIT_TESTS:-90}" python3 -m pytest -q -x -p no:cacheprovider tests/envs/test_backends.py
tail -3 "$out/tests.log" 2>/dev/null
