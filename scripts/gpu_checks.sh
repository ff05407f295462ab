#!/usr/bin/env bash
# The checks that need a GPU, in one pass, for a machine lent for minutes:
#   1. `metaworld-x info` (versions, the JAX devices);
#   2. scripts/bench_train.py on mjx, with brax's ppo.train beside it;
#   3. the walk expert trained on the mjx backend from scratch for 3 minutes
#      (WALK_MINUTES, from the command's start), then shipped to
#      OUT_DIR/walk_mjx and evaluated on the C engine (goal: the quality goals
#      within 3 minutes on one H200). Its compiled collector and update come
#      from stage 2 through JAX's compilation cache;
#   4. scripts/bench_env.py's mjx rows;
#   5. the MJX tests.
#
#   bash scripts/gpu_checks.sh OUT_DIR [ENVS] [MINIBATCHES]
#
# Each stage runs under its own time limit (seconds, overridable through
# LIMIT_<STAGE>) and writes OUT_DIR/<stage>.log; a stage that fails or runs out
# of time does not stop the next. OUT_DIR/stages.txt lists each stage's exit
# status and seconds. Stages run in order of what they are worth, so a short
# lease keeps the most important figures. With ARCHIVE=path.tar.gz set, OUT_DIR
# is packed there after every stage (atomically), for machines that hand back
# only a few files. WALK_STEPS overrides the walk run's step budget.
set -u
out=${1:?usage: gpu_checks.sh OUT_DIR [ENVS] [MINIBATCHES]}
envs=${2:-4096}
minibatches=${3:-32}  # 4096 worlds x 20 steps / 32 = 2560 samples per minibatch, as the spec's 1024 / 8
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# bench_train starts brax's trainer in a second process: neither may take most of the GPU's memory up front
export XLA_PYTHON_CLIENT_PREALLOCATE=${XLA_PYTHON_CLIENT_PREALLOCATE:-false}
# Later stages reuse what earlier ones compiled (the walk run, bench_train's collector and update).
export JAX_COMPILATION_CACHE_DIR=${JAX_COMPILATION_CACHE_DIR:-/tmp/metaworld_x_jax_cache}
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=1
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

stage bench_train "${LIMIT_BENCH_TRAIN:-170}" python3 scripts/bench_train.py --backend mjx --envs "$envs" \
  --minibatches "$minibatches" --iterations 3 --brax
tail -8 "$out/bench_train.log" 2>/dev/null

stage walk "${LIMIT_WALK:-300}" python3 -m metaworld_x.cli train expert walk --backend mjx \
  --num-envs "$envs" --num-minibatches "$minibatches" --eval-every 0 --no-video --max-minutes "${WALK_MINUTES:-3}" \
  ${WALK_STEPS:+--total-env-steps "$WALK_STEPS"} --run-dir "$runs/walk" --out "$out/walk_mjx"
# the run's scalars (throughput per iteration, returns, λ) without the checkpoints
mkdir -p "$out/walk_mjx" && cp "$runs"/walk/*.jsonl "$out/walk_mjx/" 2>/dev/null
pack
grep -E "trained|shipped|Error|error" "$out/walk.log" 2>/dev/null | tail -5

stage bench_env "${LIMIT_BENCH_ENV:-100}" python3 scripts/bench_env.py --mjx-only --seconds 3 \
  --mjx-worlds 1024 "$envs" 16384
tail -6 "$out/bench_env.log" 2>/dev/null

stage tests "${LIMIT_TESTS:-90}" python3 -m pytest -q -x -p no:cacheprovider tests/test_backends.py
tail -3 "$out/tests.log" 2>/dev/null
