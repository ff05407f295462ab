"""Reference-state initialisation must not start the robot inside a prop.

An episode starts in the clip's pose at a random time. If that pose overlaps
the scene (the sit clip's thighs inside a chair seat that was too high), the
first physics step throws the robot out and the episode ends within a few
steps, for training and evaluation alike: the sit expert lost 6 of its 10
evaluation episodes this way before the seat was lowered.
"""

import mujoco
import numpy as np
import pytest

from metaworld_x.envs.expert import expert_task
from metaworld_x.envs.reference import frame_at
from metaworld_x.expert_specs import EXPERTS
from metaworld_x.paths import MOTIONS_DIR

# Deepest overlap (m) of a robot geom with a prop geom that a start pose may have.
TOLERATED_PENETRATION = 0.005
SAMPLES_PER_CLIP = 25

# Experts whose props move during the clip (a pushed box, a carried box, an opening door):
# their start state also needs the prop's state at that time; until then a late start overlaps.
MOVING_PROPS = {
    "carry": "the box starts on its stand, not in the clip's hands",
    "push": "the box starts where the push begins, not where the clip's hands have pushed it",
    "door": "the door starts closed, not at the clip's opening angle",
}


def deepest_prop_penetration(skill: str) -> tuple[float, float, str]:
    """(depth m, clip time s, 'robot body/prop body') of the worst robot-prop overlap over the clip's poses."""
    task = expert_task(EXPERTS[skill])
    model = task.build_model()
    data = mujoco.MjData(model)
    ref = task.reference
    pelvis = model.body("pelvis").id
    joints = ref.joint_pos.shape[-1]
    worst = (0.0, 0.0, "")
    for clip in range(ref.num_clips):
        for time in np.linspace(0.0, float(ref.duration(clip)), SAMPLES_PER_CLIP):
            frame = frame_at(ref, clip, time)
            mujoco.mj_resetDataKeyframe(model, data, 0)
            data.qpos[:3], data.qpos[3:7] = frame.root_pos, frame.root_quat
            data.qpos[7 : 7 + joints] = frame.joint_pos
            mujoco.mj_forward(model, data)
            for contact in data.contact[: data.ncon]:
                bodies = model.geom_bodyid[contact.geom1], model.geom_bodyid[contact.geom2]
                on_robot = [model.body_rootid[b] == pelvis for b in bodies]
                if on_robot[0] == on_robot[1] or 0 in bodies:  # robot-prop pairs only; the floor is world
                    continue
                if -contact.dist > worst[0]:
                    worst = (-contact.dist, float(time), "/".join(model.body(b).name for b in bodies))
    return worst


@pytest.mark.skipif(not (MOTIONS_DIR / "sit.npz").is_file(), reason="the shipped clip library is missing")
@pytest.mark.parametrize("skill", [s for s, spec in EXPERTS.items() if expert_task(spec).scene != "floor"])
def test_reference_start_poses_clear_the_scene_props(skill):
    depth, time, pair = deepest_prop_penetration(skill)
    if skill in MOVING_PROPS:
        assert depth > TOLERATED_PENETRATION, f"{skill} now starts clear of its props: remove it from MOVING_PROPS"
        pytest.xfail(f"{skill}: {MOVING_PROPS[skill]} ({pair} overlap by {depth * 100:.1f} cm at t = {time:.2f} s)")
    assert depth <= TOLERATED_PENETRATION, f"{skill}: {pair} overlap by {depth * 100:.1f} cm at t = {time:.2f} s"
