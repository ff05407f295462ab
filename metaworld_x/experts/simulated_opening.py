"""A clip whose opening is remade from the simulated robot: physics-filtered reference motion.

Some openings have no kinematic version that a body can follow. crawl_get_down
gets down as a real get-up played backwards, and there is no way down from
standing with the H1's feet planted: its hips stop at 1.57 rad, so the hands
stay 0.50 m above the floor in a flat-footed squat, and kneeling puts the
centre of mass up to 37 cm past the toes. The
way down is a controlled fall onto the hands. A crawl expert run from the home
pose, its clip re-anchored onto it at every step as a router runs it, gets down
that way in every episode, but no clip start before 1.6 s survived the 0.5 m
deviation limit: the clip's dive is somewhere no body goes.

So the opening is remade by physics, as motion-cleanup pipelines make
retargeted mocap feasible: the expert is rolled out from home several times,
the rollout that tracked the clip best is kept, and its poses replace the
clip's up to the frame where it tracked best inside `splice_window`. There the
rest of the clip, moved on the ground to where the robot is (x and y; its
heading kept), takes over through a minimum-jerk blend. The whole goes through the same IK, floor and
contact stages as every other clip (`retarget.solve_clip`).

The poses a policy reached are only as good as the policy: the clip's info
names the expert (its parameter fingerprint) and the rollout, and a rebuild
with another expert gives another opening.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import jax
import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from metaworld_x.envs.reference import ground_pose
from metaworld_x.errors import UserError
from metaworld_x.motion.clip import Clip, save_clip
from metaworld_x.motion.edits.gait_transition import blend_poses, poses_from_rest_config, targets_from_poses
from metaworld_x.motion.keyframes import minimum_jerk
from metaworld_x.motion.retarget import SourceInfo, solve_clip

ROBOT_NQ = 26  # free root (7) and the 19 joints: the robot's part of a scene's qpos


@dataclass(frozen=True)
class OpeningConfig:
    """How the opening is recorded and spliced (seconds on the clip's clock)."""

    splice_window: tuple[float, float] = (3.0, 3.75)
    """The simulated poses hand over to the clip at the best-tracked frame in this window."""
    blend_s: float = 0.5
    """Simulated pose into the moved clip's, after the splice."""
    rollouts: int = 16
    """Rollouts from home (each with the task's reset noise); the best-tracking survivor is kept."""
    seed: int = 0

    def __post_init__(self) -> None:
        start, stop = self.splice_window
        if not 0 < start <= stop:
            raise UserError(f"splice_window must be 0 < start <= stop seconds, got {self.splice_window}")
        if self.blend_s <= 0 or self.rollouts < 1:
            raise UserError(f"blend_s must be > 0 s and rollouts >= 1, got {self.blend_s}, {self.rollouts}")


@dataclass(frozen=True)
class Rollouts:
    """Expert rollouts from home against one clip."""

    qpos: np.ndarray
    """[R, T + 1, 26] the robot's poses, the first at reset (clip time 0)."""
    error: np.ndarray
    """[R, T] mean keypoint tracking error (m) after each control step."""
    survived: np.ndarray
    """[R] never terminated."""
    control_dt: float
    expert: str
    """The expert's policy hash (`experts.installed.policy_hash`, as router.json records it)."""


def record_from_home(expert_dir: Path, clip_file: Path, seconds: float, rollouts: int, seed: int) -> Rollouts:
    """Roll the expert in `expert_dir` out from the home pose against the clip in `clip_file`, re-anchored at
    every step as a router runs it, for `seconds`."""
    from metaworld_x.experts.environment import expert_task, make_env
    from metaworld_x.experts.specs import expert_spec
    from metaworld_x.experts.training import AS_A_ROUTER_STARTS, _with_tracking, load_expert
    from metaworld_x.experts.policy import act
    from metaworld_x.experts.installed import policy_hash

    params, policy_spec = load_expert(Path(expert_dir))
    task = _with_tracking(expert_task(expert_spec(policy_spec["skill"])), clips=(str(clip_file),),
                          home_start_time=0.0, **AS_A_ROUTER_STARTS)
    env = make_env(task, rollouts, "cpu", auto_reset=False)
    policy = jax.jit(lambda obs: act(params, obs))
    state = env.reset(jax.random.PRNGKey(seed))
    poses, errors, alive = [np.asarray(state.data.view.qpos)[:, :ROBOT_NQ]], [], np.ones(rollouts, bool)
    for _ in range(int(round(seconds / task.control_dt))):
        state = env.step(state, policy(state.obs["state"]))
        poses.append(np.asarray(state.data.view.qpos)[:, :ROBOT_NQ])
        errors.append(np.asarray(state.metrics["imitation/tracking_error"]))
        alive &= ~np.asarray(state.done)
    return Rollouts(np.stack(poses, axis=1), np.stack(errors, axis=1), alive, task.control_dt, policy_hash(params))


def best_rollout(rollouts: Rollouts, splice_window: tuple[float, float]) -> tuple[int, int]:
    """(rollout, splice frame): the survivor with the lowest mean error up to the window's end, and its
    best-tracked frame in the window."""
    first, last = (int(round(s / rollouts.control_dt)) for s in splice_window)
    if last > rollouts.error.shape[1]:
        raise UserError(f"the rollouts last {rollouts.error.shape[1] * rollouts.control_dt:.2f} s, shorter than the "
                        f"splice window {splice_window}; record longer")
    if not rollouts.survived.any():
        raise UserError("every rollout from home ended early (fell or left the clip): this expert cannot make the "
                        "clip's opening; train it further first")
    score = np.where(rollouts.survived, rollouts.error[:, :last].mean(axis=1), np.inf)
    best = int(np.argmin(score))
    # error[k] is measured after step k, at pose k + 1
    return best, first + 1 + int(np.argmin(rollouts.error[best, first:last]))


def poses_moved_on_ground(qpos: np.ndarray, source: np.ndarray, destination: np.ndarray) -> np.ndarray:
    """[T, 26] poses moved by the floor-plane rigid motion taking ground pose `source` onto `destination`.

    `envs.reference.moved_on_ground` moves a clip's reference frames (JAX, float32, inside a step); this moves
    generalised positions in float64, so that a spliced clip lands on the simulated root without float32 rounding."""
    turn = Rotation.from_euler("z", destination[2] - source[2])
    moved = qpos.copy()
    moved[:, :2] = turn.apply(np.c_[qpos[:, :2] - source[:2], np.zeros(len(qpos))])[:, :2] + destination[:2]
    moved[:, 3:7] = (turn * Rotation.from_quat(qpos[:, 3:7], scalar_first=True)).as_quat(scalar_first=True)
    return moved


def spliced_qpos(clip_qpos: np.ndarray, simulated: np.ndarray, splice: int, blend: int) -> np.ndarray:
    """[T, 26] `simulated` poses up to frame `splice`, then the clip moved onto the simulated root's place there,
    reached over `blend` frames (minimum jerk) from the simulated poses; `simulated` must reach splice + blend.
    The clip keeps its heading, so that it travels where it did (a crawl's tunnel runs along +x): the blend turns
    the robot back from the few degrees it drifted."""
    if splice + blend > len(simulated) - 1 or splice + blend >= len(clip_qpos):
        raise UserError(f"splice at frame {splice} with a {blend}-frame blend runs past the simulated poses "
                        f"({len(simulated)}) or the clip ({len(clip_qpos)})")
    # x, y straight from the poses (float64): JAX's float32 would move the spliced clip by its rounding
    heading = float(ground_pose(clip_qpos[splice, :3], clip_qpos[splice, 3:7])[2])
    source = np.array([*clip_qpos[splice, :2], heading])
    destination = np.array([*simulated[splice, :2], heading])
    moved = poses_moved_on_ground(clip_qpos[splice:], source, destination)
    weight = minimum_jerk(np.arange(blend + 1) / blend)[:, None]
    blended = blend_poses(simulated[splice : splice + blend + 1], moved[: blend + 1], weight)
    return np.concatenate([simulated[:splice], blended, moved[blend + 1 :]])


def with_simulated_opening(clip: Clip, expert_dir: Path, *, model: mujoco.MjModel, config: OpeningConfig | None = None,
                           progress: bool = False) -> Clip:
    """`clip` with its opening replaced by the best of the expert's rollouts from home (module docstring)."""
    config = config or OpeningConfig()
    if clip.fps <= 0 or clip.qpos.shape[1] != ROBOT_NQ:
        raise UserError("the clip must be made for this robot; rebuild it with scripts/make_motion_library.py")
    with tempfile.TemporaryDirectory() as folder:
        clip_file = save_clip(clip, Path(folder) / "kinematic.npz")
        rollouts = record_from_home(expert_dir, clip_file, config.splice_window[1] + config.blend_s + 0.1,
                                    config.rollouts, config.seed)
    if abs(rollouts.control_dt - 1.0 / clip.fps) > 1e-6:
        raise UserError(f"the expert steps every {rollouts.control_dt} s and the clip has {clip.fps} fps; they must agree")
    best, splice = best_rollout(rollouts, config.splice_window)
    blend = int(round(config.blend_s * clip.fps))
    qpos = spliced_qpos(clip.qpos, rollouts.qpos[best], splice, blend)
    source = SourceInfo(kind="mocap", file=clip.source_file, licence=clip.licence, attribution=clip.attribution)
    info = {**clip.info, "simulated_opening": {
        "expert": str(Path(expert_dir).name), "expert_params_sha256": rollouts.expert,
        "rollout": best, "of": config.rollouts, "seed": config.seed, "splice_s": round(splice / clip.fps, 3),
        "blend_s": config.blend_s, "rollout_error_m": round(float(rollouts.error[best, :splice].mean()), 4),
        "survived": int(rollouts.survived.sum())}}
    return solve_clip(targets_from_poses(model, qpos), clip.skill, model=model, config=poses_from_rest_config(clip.fps),
                      source=source, info=info, progress=progress)

