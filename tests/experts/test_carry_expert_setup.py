"""The carry expert's setup: the box starts where the clip has it and the table is where the clip sets it down.

The expert follows pickup_carry, the whole take: squat, pick the box up off the
floor, carry it and set it down. Tracking with `object_joint` puts the scene's
box where the clip has it at every reference-state start (on the floor, or in
the clip's hands), and at its first frame around the robot in the home pose for a
home start; with `scene_from_clip` the carry objective lays its table out under
the clip's last box position, so following the clip delivers the box. Both are
opt-in; the composite carry scene keeps its stand and far table.
"""

from dataclasses import replace

import jax
import jax.numpy as jnp
import mujoco
import mujoco.batch
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from metaworld_x.envs.compiled import CompiledTask
from metaworld_x.experts.environment import expert_task
from metaworld_x.envs.physics_view import BatchViewReader
from metaworld_x.envs.reference import facing_forward, frame_at, held_object, object_at
from metaworld_x.envs.task import with_overrides
from metaworld_x.envs.tasks import make_task
from metaworld_x.envs.tasks.box import HOLDING_DISTANCE, PALMS, grip, level
from metaworld_x.envs.tasks.carry import CarryConfig
from metaworld_x.envs.tasks.composite import FetchConfig
from metaworld_x.envs.tasks.tracking import Tracking, TrackingConfig
from metaworld_x.errors import UserError
from metaworld_x.experts.specs import EXPERTS
from metaworld_x.motion.clip import load_clip
from metaworld_x.motion.edits.grip import GripConfig
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.scene import build_model, build_scene
from metaworld_x.scene.compose import Placement
from metaworld_x.scene.props import BOX_HALF_SIZE, TABLE_HEIGHT

pytestmark = pytest.mark.skipif(
    not (MOTIONS_DIR / "pickup_carry.npz").is_file(),
    reason="assets/motions/pickup_carry.npz (the OMOMO pickup-and-carry clip) is missing",
)

STARTS = 32
IN_HANDS = 0.4  # m: the clip's box this high is off the floor, in its hands
HANDS = ("left_hand", "right_hand")


@pytest.fixture(scope="module")
def carry():
    """(the carry expert's task, its compiled model, STARTS reset draws: PhysicsInit and info, [STARTS] each)."""
    task = expert_task(EXPERTS["carry"])
    compiled = CompiledTask.build(task)
    init, info = jax.jit(compiled.sample_resets)(jax.random.split(jax.random.PRNGKey(0), STARTS))
    return task, compiled, jax.device_get(init), jax.device_get(info)


def _data(compiled, qpos, qvel) -> mujoco.MjData:
    data = mujoco.MjData(compiled.model)
    data.qpos[:], data.qvel[:] = qpos, qvel
    mujoco.mj_forward(compiled.model, data)
    return data


def _view(compiled, qpos, qvel):
    """One world's PhysicsView, read as the cpu backend reads it."""
    batch = mujoco.batch.Batch(compiled.model, 1, 1)
    reader = BatchViewReader(batch, compiled.layout)  # a batch fills only the fields bound before it computes
    batch.reset(keyframe=0, stage=mujoco.mjtStage.mjSTAGE_NONE)
    batch.bind("qpos")[0] = qpos
    batch.bind("qvel")[0] = qvel
    batch.forward(stage=mujoco.mjtStage.mjSTAGE_VEL)
    return jax.tree.map(lambda x: jnp.asarray(x[0]), reader.read())


def _held(task, info) -> np.ndarray:
    """[STARTS] whether each start's reference box is off the floor, in the clip's hands."""
    boxes = jax.jit(jax.vmap(lambda c, t: object_at(task.reference, c, t).pos))(info["clip"], info["ref_time"])
    return np.asarray(boxes)[:, 2] > IN_HANDS


def test_every_start_puts_the_box_where_the_clip_has_it_and_between_the_palms_once_lifted(carry):
    task, compiled, init, info = carry
    box_q = compiled.layout.joint("box").qpos_start
    expected = jax.jit(jax.vmap(lambda c, t: object_at(task.reference, c, t).pos))(info["clip"], info["ref_time"])
    held = _held(task, info)
    assert 5 <= held.sum() <= STARTS - 5, "the draws cover starts with the box on the floor and in the hands"
    palms = []
    for i in range(STARTS):
        data = _data(compiled, init.qpos[i], init.qvel[i])
        np.testing.assert_allclose(data.qpos[box_q : box_q + 3], expected[i], atol=1e-5)
        if held[i]:
            palms.append([np.linalg.norm(data.site(f"{side}_palm").xpos - data.body("box").xpos) for side in ("left", "right")])
    palms = np.asarray(palms)
    # pressed on the box's sides by the clip's grip (motion.edits.grip): within holding distance, at the faces
    assert (palms > GripConfig().hand_offset - 0.01).all() and (palms < HOLDING_DISTANCE).all(), palms


def test_the_box_starts_in_the_grip_and_is_not_thrown(carry):
    """No deep overlap at the start, and the box stays by its reference while the reference targets are held."""
    task, compiled, init, info = carry
    model, box_q = compiled.model, compiled.layout.joint("box").qpos_start
    starts = np.flatnonzero(_held(task, info))
    times = info["ref_time"][starts, None] + task.control_dt * np.arange(1, 4)  # [starts, 3 control steps]
    targets, boxes = jax.jit(jax.vmap(jax.vmap(
        lambda t: (frame_at(task.reference, 0, t).joint_pos, object_at(task.reference, 0, t).pos)
    )))(times)
    for row, i in enumerate(starts):
        data = _data(compiled, init.qpos[i], init.qvel[i])
        box = model.geom("box").id
        depth = max([-c.dist for c in data.contact[: data.ncon] if box in (c.geom1, c.geom2)] + [0.0])
        # the grip asks the hand spheres GripConfig.squeeze (4 cm) inside the faces, so the servos press them on;
        # a paddle tilted on the face digs its corner in up to 2 cm further
        assert depth < GripConfig().squeeze + 0.025, f"start {i}: the box overlaps the robot by {depth * 100:.1f} cm"
        for k in range(3):
            data.ctrl[:] = targets[row, k]
            mujoco.mj_step(model, data, nstep=task.config.frame_skip)
            off = np.linalg.norm(data.qpos[box_q : box_q + 3] - boxes[row, k])
            # the squeezed box is pushed out of the overlap but not thrown
            assert off < 0.01 * (k + 2), f"start {i}: the box is {off * 100:.1f} cm off after {k + 1} steps"


def test_a_home_start_stands_at_home_beside_the_box_untouched_on_the_floor(carry):
    """As a router starts the expert: at the clip's first frame, whose pose bends 0.9 rad at the hips."""
    task, compiled, init, info = carry
    assert task.config.home_start_time == 0.0 and task.config.home_start_fraction > 0
    home_starts = np.flatnonzero(info["from_home"])
    assert len(home_starts), "a share of the draws start from home"
    box_q = compiled.layout.joint("box").qpos_start
    first_box = np.asarray(object_at(task.reference, 0, 0.0).pos)
    for i in home_starts:
        assert info["ref_time"][i] == 0.0
        np.testing.assert_allclose(init.qpos[i][7:26], compiled.model.key_qpos[0][7:26], atol=0.1)  # home, with noise
        np.testing.assert_allclose(init.qpos[i][box_q : box_q + 3], first_box, atol=1e-5)
        data = _data(compiled, init.qpos[i], init.qvel[i])
        assert min(np.linalg.norm(data.site(f"{s}_palm").xpos - data.body("box").xpos) for s in ("left", "right")) > 0.35
    stand = _data(compiled, init.qpos[home_starts[0]], init.qvel[home_starts[0]]).site("stand").xpos
    np.testing.assert_allclose(first_box, stand + [0, 0, BOX_HALF_SIZE[2]], atol=0.002)  # on its low stand
    assert stand[2] < 0.15


def test_box_velocities_are_the_derivatives_of_its_path():
    track = held_object(facing_forward(load_clip(MOTIONS_DIR / "pickup_carry.npz")))
    dt = 1.0 / 50
    moved = track["object_pos"][2:] - track["object_pos"][:-2]
    np.testing.assert_allclose(moved / (2 * dt), track["object_lin_vel"][1:-1], atol=1e-4)
    rot = Rotation.from_quat(track["object_quat"], scalar_first=True)
    predicted = rot[:-1] * Rotation.from_rotvec(track["object_ang_vel"][:-1] * dt)  # box-frame rates
    assert np.degrees((predicted.inv() * rot[1:]).magnitude()).max() < 1.0


def test_the_box_sits_square_between_the_hands_unlike_the_raw_object_pose():
    """The held box of a clip without a fitted grip (carry: the take from 1.8 s); pickup_carry's is tests/motion/test_grip.py."""
    clip = load_clip(MOTIONS_DIR / "carry.npz")
    track = held_object(clip)
    hands = [clip.keypoint_pos[:, clip.keypoint_names.index(h)] for h in HANDS]

    def in_frame(quat, pos, point):
        return Rotation.from_quat(quat, scalar_first=True).inv().apply(point - pos)

    left, right = (in_frame(track["object_quat"], track["object_pos"], h) for h in hands)
    across = np.median(left - right, axis=0)
    assert np.linalg.norm(np.median((left + right) / 2, axis=0)) < 0.01, "centred between the hands"
    assert across[1] > 0.99 * np.linalg.norm(across), "its y axis runs from the right hand to the left"
    assert Rotation.from_quat(track["object_quat"], scalar_first=True).apply([0, 0, 1.0])[:, 2].min() > 0.95
    raw = in_frame(clip.object_pose[:, :4], clip.object_pose[:, 4:], (hands[0] + hands[1]) / 2)
    assert np.linalg.norm(np.median(raw, axis=0)) > 0.04, "the source mesh's origin is off the hands' line"


def test_the_table_stands_where_the_clip_sets_the_box_down(carry):
    task, compiled, init, info = carry
    end = float(task.reference.duration(0))
    final, ref = object_at(task.reference, 0, end), frame_at(task.reference, 0, end)
    table = _data(compiled, compiled.model.key_qpos[0], compiled.model.key_qvel[0]).site("table").xpos
    np.testing.assert_allclose(table, np.asarray(final.pos) - [0, 0, BOX_HALF_SIZE[2]], atol=1e-4)
    assert table[0] > 1.5, "face_forward turns the carry onto +x: the table is ahead"
    # the clip's last frame, with the box where it leaves it, is a delivery; the first is not
    qpos = np.concatenate([ref.root_pos, ref.root_quat, ref.joint_pos, final.pos, final.quat])
    assert bool(task.objective.success(_view(compiled, qpos, np.zeros(compiled.model.nv)), {}))
    first = int(np.argmin(info["ref_time"]))
    assert not bool(task.objective.success(_view(compiled, init.qpos[first], init.qvel[first]), {}))


def test_the_clip_walks_up_to_the_table_without_touching_it(carry):
    task, compiled, _, _ = carry
    model = compiled.model
    data = mujoco.MjData(model)
    table = {g for g in range(model.ngeom) if model.body(model.geom_bodyid[g]).name == "table"}
    pelvis = model.body("pelvis").id
    for time in np.linspace(0.0, float(task.reference.duration(0)), 60):
        ref = frame_at(task.reference, 0, time)
        data.qpos[:3], data.qpos[3:7], data.qpos[7:26] = ref.root_pos, ref.root_quat, ref.joint_pos
        mujoco.mj_forward(model, data)
        for c in data.contact[: data.ncon]:
            robot = [g for g in (c.geom1, c.geom2) if model.body_rootid[model.geom_bodyid[g]] == pelvis]
            assert not ({c.geom1, c.geom2} & table and robot), f"t = {time:.2f} s: {model.geom(robot[0]).name} hits the table"


def test_the_fetch_scene_is_laid_out_as_the_carry_experts_clip_so_a_router_plays_it_in_place(carry):
    from metaworld_x.routing.skill_observation import clip_in_place

    task, compiled, _, _ = carry
    fetch = make_task("fetch").build_model()
    own, there = mujoco.MjData(compiled.model), mujoco.MjData(fetch)
    mujoco.mj_forward(compiled.model, own)
    mujoco.mj_forward(fetch, there)
    for name in ("box", "table", "stand"):
        np.testing.assert_allclose(there.body(name).xpos, own.body(name).xpos, atol=0.01)
        np.testing.assert_allclose(there.site(name).xpos, own.site(name).xpos, atol=0.01)
    assert clip_in_place(fetch, task, 0.0, make_task("fetch").start_root(fetch))
    carry_scene = build_model("carry", "h1_hands")
    assert not clip_in_place(carry_scene, task, 0.0, carry_scene.key_qpos[0][:3])


def test_the_carry_clip_played_in_the_fetch_scene_reaches_every_fetch_subgoal_in_order(carry):
    """The robot and the box as the clip has them, step by step, in the fetch scene: a router that plays the
    carry expert in place, if the expert follows its clip, fetches the box."""
    task = carry[0]
    fetch_task = make_task("fetch")
    fetch = CompiledTask.build(fetch_task)
    box_q = fetch.layout.joint("box").qpos_start
    advance = jax.jit(fetch_task.advance)
    at = jax.jit(lambda t: (frame_at(task.reference, 0, t), object_at(task.reference, 0, t)))
    info = fetch_task.reset_info(jax.random.PRNGKey(0))
    reached_at = []
    for step in range(int(float(task.reference.duration(0)) / task.control_dt) + 1):
        ref, box = at(step * task.control_dt)
        qpos = np.array(fetch.model.key_qpos[0])
        qpos[:3], qpos[3:7], qpos[7:26] = ref.root_pos, ref.root_quat, ref.joint_pos
        qpos[box_q : box_q + 3], qpos[box_q + 3 : box_q + 7] = box.pos, box.quat
        phase = int(info["phase"])
        info = advance(_view(fetch, qpos, np.zeros(fetch.model.nv)), info)
        reached_at += [step * task.control_dt] * (int(info["phase"]) - phase)
    assert len(reached_at) == 4, f"sub-goals reached at {reached_at} s"
    assert reached_at[0] > 0.5, "the hands reach the box only after bending down to it"
    assert reached_at[1] - reached_at[0] < 1.5 and reached_at[3] > 3.5, reached_at


def test_a_dropped_box_ends_the_episode(carry):
    task, compiled, init, info = carry
    first = int(np.flatnonzero(~info["from_home"])[0])  # a clip start: the tighter limit
    one = {k: v[first] for k, v in info.items()}
    view = _view(compiled, init.qpos[first], init.qvel[first])
    assert not bool(task._terminate_deviation(view, one))
    box_z = compiled.layout.joint("box").qpos_start + 2
    dropped = view.replace(qpos=view.qpos.at[box_z].add(-(task.config.max_deviation + 0.05)))
    assert bool(task._terminate_deviation(dropped, one))


def test_a_box_tipped_past_the_tilt_limit_ends_the_episode_and_a_turned_one_does_not(carry):
    task, compiled, init, info = carry
    limited = replace(task, config=replace(task.config, max_object_tilt_deg=30.0))
    unlimited = replace(task, config=replace(task.config, max_object_tilt_deg=None))
    held = int(np.flatnonzero(~info["from_home"] & (init.qpos[:, compiled.layout.joint("box").qpos_start + 2] > IN_HANDS))[0])
    one = {k: v[held] for k, v in info.items()}
    view = _view(compiled, init.qpos[held], init.qvel[held])
    assert not bool(limited._terminate_deviation(view, one)), "the box as the clip holds it"
    quat = compiled.layout.joint("box").qpos_start + 3
    box_quat = np.asarray(view.qpos[quat:quat + 4])

    def turned(axis: str, degrees: float):
        rotation = Rotation.from_euler(axis, degrees, degrees=True) * Rotation.from_quat(box_quat, scalar_first=True)
        return view.replace(qpos=view.qpos.at[quat:quat + 4].set(jnp.asarray(rotation.as_quat(scalar_first=True))))

    for axis in "xy":
        assert bool(limited._terminate_deviation(turned(axis, 40.0), one)), f"pitched 40° about {axis}"
        assert not bool(limited._terminate_deviation(turned(axis, 20.0), one)), f"pitched 20° about {axis}"
    assert not bool(limited._terminate_deviation(turned("z", 90.0), one)), "yaw is free"
    assert not bool(unlimited._terminate_deviation(turned("x", 40.0), one)), "no limit: a tilted box goes on"
    for bad in (0.0, 180.0, -10.0):
        with pytest.raises(UserError, match="max_object_tilt_deg must lie in"):
            replace(task.config, max_object_tilt_deg=bad)
    with pytest.raises(UserError, match="set object_joint too"):
        TrackingConfig(max_object_tilt_deg=30.0)


def test_object_initialisation_is_opt_in():
    assert TrackingConfig().object_joint is None and not TrackingConfig().scene_from_clip
    for skill in ("stand", "walk"):
        assert not {"object_joint", "scene_from_clip"} & set(EXPERTS[skill].tracking)
    plain = Tracking(with_overrides(TrackingConfig(), {"clips": ("carry",)}), objective=make_task("carry"))
    compiled = CompiledTask.build(plain)
    key = jax.random.PRNGKey(0)
    init = plain.reset_physics(key, compiled.home, plain.reset_info(key))
    np.testing.assert_array_equal(np.asarray(init.qpos)[26:], np.asarray(compiled.home.qpos)[26:])
    assert compiled.model.nbody == build_model("carry", "h1_hands").nbody, "the objective's own scene"


def test_the_composite_carry_scene_keeps_the_stand_and_the_far_table():
    model = build_model("carry", "h1_hands")
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    np.testing.assert_allclose(data.site("table").xpos, (3.0, 0.0, TABLE_HEIGHT))
    assert data.site("stand").xpos[0] == 1.0 and data.body("box").xpos[0] == 1.0
    assert make_task("carry").scene == "carry"


def test_bad_object_settings_are_user_errors():
    key = jax.random.PRNGKey(0)
    with pytest.raises(UserError, match="one clip"):
        TrackingConfig(clips=("carry", "pickup"), scene_from_clip=True)
    with pytest.raises(UserError, match="scene_from_clip needs an objective"):
        Tracking(with_overrides(TrackingConfig(), {"clips": ("carry",), "scene_from_clip": True}), objective=make_task("walk"))
    walk = Tracking(with_overrides(TrackingConfig(), {"clips": ("walk",), "object_joint": "box"}), objective=make_task("carry"))
    with pytest.raises(UserError, match="walk have no object pose"):
        walk.reset_physics(key, CompiledTask.build(walk).home, walk.reset_info(key))
    with pytest.raises(UserError, match="named 'box'"):
        CompiledTask.build(Tracking(with_overrides(TrackingConfig(), {"clips": ("carry",), "object_joint": "box"})))
    with pytest.raises(UserError, match="'box' cannot take the options"):
        build_scene((Placement("box", (0.0, 0.0, 1.0), (("height", 0.5),)),))
    for config in (CarryConfig, FetchConfig):  # 90° or more would count a box on its side as upright
        for tilt in (0.0, 90.0, -5.0):
            with pytest.raises(UserError, match="max_tilt_deg must be between 0 and 90"):
                config(max_tilt_deg=tilt)
        assert config(max_tilt_deg=30.0).max_tilt_deg == 30.0


def _imitation_term(task, compiled, name: str, time: float, box_pos, box_quat) -> float:
    """Imitation term `name` over its scale, with the robot where the clip has it at `time` and the box as given."""
    ref = frame_at(task.reference, 0, time)
    qpos = np.concatenate([ref.root_pos, ref.root_quat, ref.joint_pos, box_pos, box_quat])
    info = {**task.clip_info(0, time), "last_action": jnp.zeros(19), "step": jnp.asarray(0)}
    terms = task.reward_terms(_view(compiled, qpos, np.zeros(compiled.model.nv)), info, jnp.zeros(19))
    return float(terms[name]) / getattr(task.config.rewards, name)


def test_the_box_is_tracked_as_an_imitation_term_that_a_box_left_on_the_floor_loses(carry):
    """A paddle resting on the box's top scored full "hold"; object_pos asks for the box where the clip has it."""
    task, compiled, _, _ = carry
    assert "object_pos" in task.imitation_terms and "object_pos" in task.reward_names
    assert "object_pos" not in expert_task(EXPERTS["walk"]).reward_names, "only tasks with an object_joint score it"
    lifted = 5.0  # s: the box is carried
    box = object_at(task.reference, 0, lifted)
    where = np.asarray(box.pos)
    assert _imitation_term(task, compiled, "object_pos", lifted, where, box.quat) > 0.999
    on_floor = np.array([where[0], where[1], BOX_HALF_SIZE[2]])
    assert _imitation_term(task, compiled, "object_pos", lifted, on_floor, box.quat) < 0.01


def test_grip_pays_palms_on_the_side_faces_and_little_for_palms_on_top(carry):
    """The carry objective's grip: "hold" paid a palm anywhere within 0.23 m of the box's centre, so a policy
    resting its paddles on the box's top scored in full and never lifted it."""
    task, compiled, init, info = carry
    held = np.flatnonzero(_held(task, info))
    views = [_view(compiled, init.qpos[i], init.qvel[i]) for i in held]
    scores = [float(grip(view)) for view in views]
    assert min(scores) > 0.99, f"the clip's grip holds the palms on the faces: {scores}"

    view = views[0]
    palm_ids = [view.layout.sites.index(p) for p in PALMS]
    rot, centre = np.asarray(view.site_rot("box")), np.asarray(view.site("box"))
    on_top = [centre + rot @ np.array([0.0, side * 0.12, BOX_HALF_SIZE[2] + 0.035]) for side in (1, -1)]
    top_view = view.replace(site_pos=view.site_pos.at[jnp.asarray(palm_ids)].set(jnp.asarray(np.stack(on_top))))
    assert float(grip(top_view)) < 0.3, "paddles resting on the top are not a grip"
    swapped = view.replace(site_pos=view.site_pos.at[jnp.asarray(palm_ids)].set(view.site_pos[jnp.asarray(palm_ids[::-1])]))
    assert float(grip(swapped)) > 0.99, "either palm may take either face"
    one_off = view.replace(site_pos=view.site_pos.at[palm_ids[0]].add(jnp.asarray(rot[:, 1] * 0.3)))
    assert float(grip(one_off)) < 0.6, "both palms must be on the box"
    behind = view.replace(site_pos=view.site_pos.at[jnp.asarray(palm_ids)].add(jnp.asarray(-0.12 * rot[:, 0])))
    assert float(grip(behind)) < 0.5, "held 12 cm behind its middle, the box pivots about the hands' line"


def test_level_pays_an_upright_box_and_nothing_for_one_swung_about_the_hands(carry):
    task, compiled, init, info = carry
    view = _view(compiled, init.qpos[0], init.qvel[0])
    box = view.layout.sites.index("box")
    assert float(level(view)) == 1.0
    for degrees, expected in ((5, 1.0), (30, 0.5), (60, 0.0)):
        tilt = Rotation.from_euler("y", degrees, degrees=True).as_matrix()
        tilted = view.replace(site_mat=view.site_mat.at[box].set(jnp.asarray(tilt @ np.asarray(view.site_rot("box")))))
        assert abs(float(level(tilted)) - expected) < 0.15, (degrees, float(level(tilted)))


def test_a_box_resting_above_the_floor_gets_a_stand_and_a_held_one_none():
    from metaworld_x.envs.tasks.carry import Carry

    table_end = [2.0, 0.0, 0.7]
    resting = np.array([[0.5, 0.1, 0.257]] * 20 + [table_end])
    placed = {p.prop: p for p in Carry.scene_along(resting)}
    assert placed["box"].pos == (0.5, 0.1, 0.257)
    stand = dict(placed["stand"].options)
    assert placed["stand"].pos == (0.5, 0.1, 0.0) and abs(stand["height"] - (0.257 - BOX_HALF_SIZE[2])) < 0.002
    on_floor = {p.prop: p for p in Carry.scene_along(np.array([[0.5, 0.1, 0.16]] * 20 + [table_end]))}
    assert "stand" not in on_floor and on_floor["box"].pos[2] < 0.16, "within FLOOR_SNAP (10 cm) of the floor: on it"
    held = np.linspace([0.5, 0.1, 0.9], table_end, 30)  # moving from the start: in the clip's hands
    assert {p.prop for p in Carry.scene_along(held)} == {"box", "table"}


def _box_on_the_table(compiled, qpos, quat) -> np.ndarray:
    """qpos with the box resting at the middle of the table top, turned by `quat` (w, x, y, z)."""
    data = _data(compiled, qpos, np.zeros(compiled.model.nv))
    box_q = compiled.layout.joint("box").qpos_start
    placed = np.array(qpos)
    placed[box_q : box_q + 3] = data.site("table").xpos + np.array([0.0, 0.0, BOX_HALF_SIZE[2]])
    placed[box_q + 3 : box_q + 7] = quat
    return placed


# The box rolled a quarter turn about the line between the palms (its y axis): how an early expert set it
# down. Its x and z half-sizes are equal, so the rolled box has the upright one's footprint and height.
ROLLED = Rotation.from_euler("y", 90, degrees=True).as_quat(scalar_first=True)
UPRIGHT = np.array([1.0, 0.0, 0.0, 0.0])


def test_a_box_rolled_onto_its_side_on_the_table_is_not_delivered(carry):
    task, compiled, init, info = carry
    carry_task = task.objective
    terms = jax.jit(lambda view: carry_task.reward_terms(view, {}, jnp.zeros(19)))
    success = jax.jit(lambda view: carry_task.success(view, {}))
    scales = carry_task.config.rewards
    upright, rolled = (_view(compiled, _box_on_the_table(compiled, init.qpos[0], q), np.zeros(compiled.model.nv))
                       for q in (UPRIGHT, ROLLED))
    assert bool(success(upright)) and not bool(success(rolled))
    assert float(terms(upright)["deliver"]) == pytest.approx(scales.deliver)
    assert float(terms(rolled)["deliver"]) == 0.0, "a box on its side earns nothing for being in place"
    assert float(terms(upright)["grip"]) == pytest.approx(scales.grip), "delivered: the hands are free"
    assert float(terms(rolled)["grip"]) < 0.5 * scales.grip, "the palms of a start are not on a box on the table"
    leaning = Rotation.from_euler("y", carry_task.config.max_tilt_deg + 3, degrees=True).as_quat(scalar_first=True)
    assert not bool(success(_view(compiled, _box_on_the_table(compiled, init.qpos[0], leaning), np.zeros(compiled.model.nv))))


def test_the_clips_box_orientation_is_an_imitation_term_that_a_rolled_box_loses(carry):
    task, compiled, _, _ = carry
    assert "object_rot" in task.imitation_terms and "object_rot" not in expert_task(EXPERTS["walk"]).reward_names
    end = float(task.reference.duration(0))
    box = object_at(task.reference, 0, end)
    clip_quat = np.asarray(box.quat)
    assert _imitation_term(task, compiled, "object_rot", end, box.pos, clip_quat) > 0.999
    rolled = Rotation.from_quat(ROLLED, scalar_first=True) * Rotation.from_quat(clip_quat, scalar_first=True)
    assert _imitation_term(task, compiled, "object_rot", end, box.pos, rolled.as_quat(scalar_first=True)) < 0.01


def test_fetch_places_only_an_upright_box():
    fetch_task = make_task("fetch")
    fetch = CompiledTask.build(fetch_task)
    advance = jax.jit(fetch_task.advance)
    transported = {"phase": jnp.asarray(3, jnp.int32)}
    phases = [int(advance(_view(fetch, _box_on_the_table(fetch, fetch.model.key_qpos[0], q), np.zeros(fetch.model.nv)),
                          transported)["phase"]) for q in (UPRIGHT, ROLLED)]
    assert phases == [4, 3], "placed upright: done; rolled onto its side: not placed"


def test_the_place_reward_tells_a_box_set_down_short_from_one_on_its_place(carry):
    """`deliver` pays a box 13 cm short of its place 0.99 of one on it; `place` (off in the shipped expert, turned on
    through the spec's objective_overrides) pays it half, and nothing from 23 cm off."""
    task, compiled, init, _ = carry
    assert task.objective.config.rewards.place == 0.0, "the shipped carry was trained without it"
    carry_task = replace(task.objective, config=with_overrides(task.objective.config, {"rewards": {"place": 1.0}}))
    terms = jax.jit(lambda view: carry_task.reward_terms(view, {}, jnp.zeros(19)))
    box_x = compiled.layout.joint("box").qpos_start
    placed = _box_on_the_table(compiled, init.qpos[0], UPRIGHT)
    figures = {}
    for short in (0.0, 0.08, 0.13, 0.25):
        qpos = placed.copy()
        qpos[box_x] -= short
        t = terms(_view(compiled, qpos, np.zeros(compiled.model.nv)))
        figures[short] = (float(t["deliver"]) / carry_task.config.rewards.deliver, float(t["place"]))
    assert [round(d, 3) for d, _ in figures.values()] == [1.0, 1.0, 0.99, 0.95]
    assert [round(p, 3) for _, p in figures.values()] == [1.0, 0.75, 0.5, 0.0]


def test_grip_release_height_keeps_the_hands_paid_for_holding_a_box_above_its_place(carry):
    """Delivered means within 10 cm of the place, in the air too: without grip_release_height the hands are paid
    whatever they do with the box 8 cm above it, and an expert trained so opened its palms there. The shipped expert
    is trained with it: only a box resting on the table top frees them; on the table, either way."""
    task, compiled, init, _ = carry
    assert task.objective.config.grip_release_height == 0.02, "the shipped carry is trained with it"
    free = replace(task.objective, config=with_overrides(task.objective.config, {"grip_release_height": None}))
    assert free.config.grip_release_height is None
    box_z = compiled.layout.joint("box").qpos_start + 2
    on_table = _box_on_the_table(compiled, init.qpos[0], UPRIGHT)
    above = on_table.copy()
    above[box_z] += 0.08
    on_table_view, above_view = (_view(compiled, q, np.zeros(compiled.model.nv)) for q in (on_table, above))
    for objective, frees_above in ((free, True), (task.objective, False)):
        grip_term = jax.jit(lambda view, o=objective: o.reward_terms(view, {}, jnp.zeros(19))["grip"])
        scale = objective.config.rewards.grip
        assert float(grip_term(on_table_view)) == pytest.approx(scale)
        paid = float(grip_term(above_view))
        assert (paid == pytest.approx(scale)) if frees_above else paid < 0.5 * scale
        assert bool(objective.success(above_view, {})), "still delivered"


def test_grip_release_height_must_be_positive():
    with pytest.raises(UserError, match="grip_release_height must be positive"):
        CarryConfig(grip_release_height=0.0)
