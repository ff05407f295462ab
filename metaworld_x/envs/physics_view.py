"""The small, engine-neutral slice of physics that tasks read.

Both backends fill the same `PhysicsView` (float32): the MJX backend from its
`mjx.Data`, the C backend from `mujoco.batch` bound arrays. Observation,
reward and termination are functions of this view alone, so they are written
once and cannot drift between engines.

All derived quantities are at the *new* state (MuJoCo's velocity stage, as
after `mj_step1`), except the foot forces and actuator forces, which are those
that acted during the last physics substep: both are only defined by a
constraint solve, which the next substep redoes with the next controls.
"""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from flax import struct

from metaworld_x.envs.sensors import COM_VELOCITY_SENSOR, FOOT_TOUCH_SENSORS, ROOT_BODY
from metaworld_x.errors import UserError
from metaworld_x.robot import JOINT_NAMES, SITE_NAMES

ROBOT_ROOT_JOINT = "root"
# Bodies every view carries: the pelvis (root) and the torso, whose
# orientation defines "upright".
ROBOT_BODIES: tuple[str, ...] = ("pelvis", "torso_link")


@dataclass(frozen=True)
class JointSlice:
    """Where one joint's coordinates sit in qpos and qvel."""

    name: str
    qpos_start: int
    qpos_size: int
    qvel_start: int
    qvel_size: int


@dataclass(frozen=True)
class ViewLayout:
    """Which model objects a view holds, in which order. Static and hashable.

    Built once per (model, task) by `ViewLayout.from_model`; tasks look
    objects up by name through the view's helpers, never by raw model id.
    """

    bodies: tuple[str, ...]
    body_ids: tuple[int, ...]
    sites: tuple[str, ...]
    site_ids: tuple[int, ...]
    joints: tuple[JointSlice, ...]
    robot_qpos: tuple[int, ...]
    """qpos indices of the robot (root then actuated joints)."""
    robot_qvel: tuple[int, ...]
    root_body_id: int
    com_velocity_adr: int
    foot_force_adr: tuple[int, ...]
    nq: int
    nv: int
    nu: int
    nmocap: int

    @staticmethod
    def from_model(
        model: mujoco.MjModel,
        bodies: tuple[str, ...] = (),
        sites: tuple[str, ...] = (),
        joints: tuple[str, ...] = (),
    ) -> "ViewLayout":
        """The layout for `model`, holding the robot's objects plus those named."""
        bodies = _unique(ROBOT_BODIES + tuple(bodies))
        sites = _unique(SITE_NAMES + tuple(sites))
        joint_names = _unique((ROBOT_ROOT_JOINT,) + JOINT_NAMES + tuple(joints))
        slices = tuple(_joint_slice(model, name) for name in joint_names)
        robot = slices[: 1 + len(JOINT_NAMES)]
        return ViewLayout(
            bodies=bodies,
            body_ids=tuple(_id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in bodies),
            sites=sites,
            site_ids=tuple(_id(model, mujoco.mjtObj.mjOBJ_SITE, n) for n in sites),
            joints=slices,
            robot_qpos=tuple(i for s in robot for i in range(s.qpos_start, s.qpos_start + s.qpos_size)),
            robot_qvel=tuple(i for s in robot for i in range(s.qvel_start, s.qvel_start + s.qvel_size)),
            root_body_id=_id(model, mujoco.mjtObj.mjOBJ_BODY, ROOT_BODY),
            com_velocity_adr=int(model.sensor(COM_VELOCITY_SENSOR).adr[0]),
            foot_force_adr=tuple(int(model.sensor(s).adr[0]) for s in FOOT_TOUCH_SENSORS),
            nq=model.nq,
            nv=model.nv,
            nu=model.nu,
            nmocap=model.nmocap,
        )

    def joint(self, name: str) -> JointSlice:
        for s in self.joints:
            if s.name == name:
                return s
        raise KeyError(f"joint {name!r} is not in this view; views hold {[s.name for s in self.joints]}")


@struct.dataclass
class PhysicsView:
    """One world's physics as tasks see it (add a leading [B] when batched)."""

    qpos: jax.Array  # [nq] whole model, robot first
    qvel: jax.Array  # [nv]
    body_pos: jax.Array  # [n_bodies, 3] world frame
    body_quat: jax.Array  # [n_bodies, 4] (w, x, y, z)
    site_pos: jax.Array  # [n_sites, 3]
    site_mat: jax.Array  # [n_sites, 3, 3] rotation, site frame to world
    com_pos: jax.Array  # [3] the robot's centre of mass
    com_vel: jax.Array  # [3] its linear velocity
    foot_force: jax.Array  # [2] normal contact force on the left and right sole (N)
    actuator_force: jax.Array  # [nu] (N·m)
    ctrl: jax.Array  # [nu] servo targets applied (rad)
    time: jax.Array  # [] simulated seconds since reset
    layout: ViewLayout = struct.field(pytree_node=False)

    def site(self, name: str) -> jax.Array:
        """[..., 3] world position of a named site."""
        return self.site_pos[..., self.layout.sites.index(name), :]

    def site_rot(self, name: str) -> jax.Array:
        return self.site_mat[..., self.layout.sites.index(name), :, :]

    def body(self, name: str) -> jax.Array:
        return self.body_pos[..., self.layout.bodies.index(name), :]

    def body_rot_quat(self, name: str) -> jax.Array:
        return self.body_quat[..., self.layout.bodies.index(name), :]

    def joint_qpos(self, name: str) -> jax.Array:
        s = self.layout.joint(name)
        return self.qpos[..., s.qpos_start : s.qpos_start + s.qpos_size]

    def joint_qvel(self, name: str) -> jax.Array:
        s = self.layout.joint(name)
        return self.qvel[..., s.qvel_start : s.qvel_start + s.qvel_size]

    @property
    def root_pos(self) -> jax.Array:
        return self.joint_qpos(ROBOT_ROOT_JOINT)[..., :3]

    @property
    def root_quat(self) -> jax.Array:
        return self.joint_qpos(ROBOT_ROOT_JOINT)[..., 3:7]

    @property
    def robot_qpos(self) -> jax.Array:
        return self.qpos[..., jnp.asarray(self.layout.robot_qpos)]

    @property
    def robot_qvel(self) -> jax.Array:
        return self.qvel[..., jnp.asarray(self.layout.robot_qvel)]

    def just_reset(self) -> "PhysicsView":
        """This view as a world just reset: no substep has acted yet, so no contact or actuator force has.

        The engines' buffers hold something else there, because both leave a reset at
        the velocity stage: mujoco.batch holds the forces of whichever simulation its
        thread last computed, MJX those of its template. The batch's leftovers made
        first observations depend on thread scheduling, and a resumed run differ
        from an unbroken one."""
        return self.replace(foot_force=jnp.zeros_like(self.foot_force),
                            actuator_force=jnp.zeros_like(self.actuator_force))


def view_from_mjx(data, layout: ViewLayout) -> PhysicsView:
    """The view of one world's `mjx.Data` (call under vmap for a batch)."""
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    return PhysicsView(
        qpos=f32(data.qpos),
        qvel=f32(data.qvel),
        body_pos=f32(data.xpos[jnp.asarray(layout.body_ids)]),
        body_quat=f32(data.xquat[jnp.asarray(layout.body_ids)]),
        site_pos=f32(data.site_xpos[jnp.asarray(layout.site_ids)]),
        site_mat=f32(data.site_xmat[jnp.asarray(layout.site_ids)].reshape(-1, 3, 3)),
        com_pos=f32(data.subtree_com[layout.root_body_id]),
        com_vel=f32(data.sensordata[layout.com_velocity_adr : layout.com_velocity_adr + 3]),
        foot_force=f32(data.sensordata[jnp.asarray(layout.foot_force_adr)]),
        actuator_force=f32(data.actuator_force),
        ctrl=f32(data.ctrl),
        time=f32(data.time),
        layout=layout,
    )


class BatchViewReader:
    """Fills a batched PhysicsView from `mujoco.batch` bound arrays.

    The float32 buffers are allocated once and refilled in place each step,
    so reading the view costs a few strided copies and no allocation.
    """

    def __init__(self, batch, layout: ViewLayout):
        self.layout = layout
        n = batch.nsim
        self._src = {name: batch.bind(name) for name in (
            "qpos", "qvel", "xpos", "xquat", "site_xpos", "site_xmat", "subtree_com",
            "sensordata", "actuator_force", "ctrl", "time",
        )}
        body_ids, site_ids = np.asarray(layout.body_ids), np.asarray(layout.site_ids)
        # fields gathered by index: (destination shape, source, index along axis 1)
        self._gathers = {
            "body_pos": ((n, len(body_ids), 3), "xpos", body_ids),
            "body_quat": ((n, len(body_ids), 4), "xquat", body_ids),
            "site_pos": ((n, len(site_ids), 3), "site_xpos", site_ids),
            "site_mat": ((n, len(site_ids), 9), "site_xmat", site_ids),
            "foot_force": ((n, len(layout.foot_force_adr)), "sensordata", np.asarray(layout.foot_force_adr)),
        }
        adr = layout.com_velocity_adr
        # fields that are plain slices: (source, slice)
        self._slices = {
            "qpos": ("qpos", np.s_[:]),
            "qvel": ("qvel", np.s_[:]),
            "com_pos": ("subtree_com", np.s_[:, layout.root_body_id]),
            "com_vel": ("sensordata", np.s_[:, adr : adr + 3]),
            "actuator_force": ("actuator_force", np.s_[:]),
            "ctrl": ("ctrl", np.s_[:]),
            "time": ("time", np.s_[:]),
        }
        self._buffers = {k: np.zeros(shape, np.float32) for k, (shape, _, _) in self._gathers.items()}
        for k, (src, sl) in self._slices.items():
            self._buffers[k] = np.zeros(self._src[src][sl].shape, np.float32)

    def read(self) -> PhysicsView:
        """The current view of every world, [B, ...] float32 numpy arrays."""
        b = self._buffers
        for k, (_, src, idx) in self._gathers.items():
            _take_into(b[k], self._src[src], idx)
        for k, (src, sl) in self._slices.items():
            np.copyto(b[k], self._src[src][sl], casting="same_kind")
        n = b["site_mat"].shape[0]
        return PhysicsView(
            qpos=b["qpos"], qvel=b["qvel"], body_pos=b["body_pos"], body_quat=b["body_quat"],
            site_pos=b["site_pos"], site_mat=b["site_mat"].reshape(n, -1, 3, 3), com_pos=b["com_pos"],
            com_vel=b["com_vel"], foot_force=b["foot_force"], actuator_force=b["actuator_force"],
            ctrl=b["ctrl"], time=b["time"], layout=self.layout,
        )


def _take_into(out: np.ndarray, src: np.ndarray, idx: np.ndarray) -> None:
    """out[:, j] = src[:, idx[j]] with a float64 -> float32 cast, no temporaries."""
    for j, i in enumerate(idx):
        np.copyto(out[:, j], src[:, i], casting="same_kind")


def _unique(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _id(model: mujoco.MjModel, kind: mujoco.mjtObj, name: str) -> int:
    i = mujoco.mj_name2id(model, kind, name)
    if i < 0:
        raise UserError(f"the scene has no {kind.name[6:].lower()} named {name!r}, which the task needs")
    return i


def _joint_slice(model: mujoco.MjModel, name: str) -> JointSlice:
    j = _id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    sizes = {mujoco.mjtJoint.mjJNT_FREE: (7, 6), mujoco.mjtJoint.mjJNT_BALL: (4, 3)}
    nq, nv = sizes.get(mujoco.mjtJoint(model.jnt_type[j]), (1, 1))
    return JointSlice(name, int(model.jnt_qposadr[j]), nq, int(model.jnt_dofadr[j]), nv)
