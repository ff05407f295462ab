"""The lean physics settings (few solver iterations, contacts at the feet and hands only) keep the two backends in
agreement, as the model's own settings do (test_backends.py), and take effect in the model both backends build."""

import json
import os
import subprocess
import sys

import mujoco
import pytest

from metaworld_x.envs.compiled import CompiledTask
from metaworld_x.envs.physics_options import FEET_AND_HANDS, LEAN, PhysicsOptions
from metaworld_x.envs.tasks import make_task
from metaworld_x.errors import UserError

WORLDS = 2
HORIZON = 10  # control steps (0.2 s): the walk robot's feet land and push off in it
QPOS_TOLERANCE = 1e-4  # the bound of test_backends.py's agreement under the model's own settings


def test_the_lean_settings_reach_the_model_both_backends_build():
    task = make_task("walk")
    plain, lean = CompiledTask.build(task).model, CompiledTask.build(task, physics=LEAN).model
    assert (lean.opt.iterations, lean.opt.ls_iterations) == (LEAN.iterations, LEAN.ls_iterations)
    assert (plain.opt.iterations, plain.opt.ls_iterations) != (lean.opt.iterations, lean.opt.ls_iterations)
    robot = plain.body_rootid[plain.geom_bodyid[mujoco.mj_name2id(plain, mujoco.mjtObj.mjOBJ_GEOM, "left_foot")]]
    for geom in range(plain.ngeom):
        name = mujoco.mj_id2name(plain, mujoco.mjtObj.mjOBJ_GEOM, geom)
        touches = bool(lean.geom_contype[geom] or lean.geom_conaffinity[geom])
        if plain.body_rootid[plain.geom_bodyid[geom]] != robot or name in FEET_AND_HANDS:
            assert touches == bool(plain.geom_contype[geom] or plain.geom_conaffinity[geom]), name  # unchanged
        else:
            assert not touches, name
    assert plain.opt.timestep == lean.opt.timestep  # the control rate stays the task's


def test_bad_settings_are_refused_with_the_mend():
    with pytest.raises(UserError, match="iterations must be at least 1"):
        PhysicsOptions(iterations=0)
    with pytest.raises(UserError, match="no geom of the model; the H1's are e.g. left_foot"):
        CompiledTask.build(make_task("walk"), physics=PhysicsOptions(colliding=("left_boot",)))


# Run in a process of its own, compiled without XLA's optimisations: MJX's walk step takes a minute to compile
# on a small CPU otherwise. Both engines step the same 10 random actions from the same resets.
AGREEMENT = f"""
import json, jax, numpy as np
from metaworld_x.envs import make
from metaworld_x.envs.physics_options import LEAN
mjx_env = make("walk", backend="mjx", num_worlds={WORLDS}, impl="jax", physics=LEAN)
cpu_env = make("walk", backend="cpu", num_worlds={WORLDS}, nthread=1, physics=LEAN)
assert mjx_env.model.opt.iterations == cpu_env.compiled.model.opt.iterations == LEAN.iterations
m, c = mjx_env.reset(jax.random.PRNGKey(7)), cpu_env.reset(jax.random.PRNGKey(7))
out = dict(start=float(np.abs(np.asarray(m.data.qpos) - c.data.view.qpos).max()), qpos=0.0, reward=0.0, obs=0.0, touching=0)
for action in np.random.default_rng(0).uniform(-1, 1, ({HORIZON}, {WORLDS}, 19)).astype(np.float32):
    m, c = mjx_env.step(m, action), cpu_env.step(c, action)
    for key, a, b in (("qpos", m.data.qpos, c.data.view.qpos), ("reward", m.reward, c.reward),
                      ("obs", m.obs["state"], c.obs["state"])):
        out[key] = max(out[key], float(np.abs(np.asarray(a) - np.asarray(b)).max()))
    out["touching"] += int(np.sum(np.asarray(m.data._impl.contact.dist) < 0))
print(json.dumps(out))
"""


@pytest.mark.slow
def test_backends_agree_under_the_lean_settings():
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_backend_optimization_level=0"}
    result = subprocess.run([sys.executable, "-c", AGREEMENT], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"under the lean settings, over {HORIZON} steps: max |qpos_mjx - qpos_cpu| {found['qpos']:.2e}, "
          f"reward {found['reward']:.2e}, observation {found['obs']:.2e}")
    assert found["start"] == 0.0
    assert found["touching"] > 0, "no contact in the horizon: the agreement would not cover the feet"
    assert found["qpos"] < QPOS_TOLERANCE and found["reward"] < 1e-3 and found["obs"] < 1e-2
