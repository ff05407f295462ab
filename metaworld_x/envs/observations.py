"""Observation pieces shared by the tasks: proprioception and the heading frame.

The heading frame is the world frame turned by the robot's yaw: its x axis
points where the pelvis faces, projected on the floor. Targets expressed in it
do not change when the robot walks or turns in place, only when it moves
relative to them.
"""

import jax.numpy as jnp

from metaworld_x.envs.physics_view import PhysicsView


def yaw(quat):
    """Heading angle (rad) of a (w, x, y, z) quaternion's x axis."""
    w, x, y, z = quat[..., 0], quat[..., 1], quat[..., 2], quat[..., 3]
    return jnp.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def twist_yaw(quat):
    """Heading angle (rad) of a (w, x, y, z) quaternion's twist about the vertical (swing-twist decomposition).

    Unlike `yaw`, it stays defined for a body pitched past vertical: a crawling
    pelvis points its x axis at the floor, where the x axis's heading jumps by
    up to pi between frames a few degrees apart. Upright, the two differ by
    second-order terms (pitch·roll/2); only upside down (pitch pi) is it undefined.
    """
    half = jnp.arctan2(quat[..., 3], quat[..., 0])  # twist half-angle; q and -q give the same heading
    return jnp.arctan2(jnp.sin(2 * half), jnp.cos(2 * half))


def to_heading_frame(vec, quat):
    """[..., 3] world vectors expressed in the heading frame of `quat`."""
    angle = yaw(quat)
    c, s = jnp.cos(angle), jnp.sin(angle)
    x, y = vec[..., 0], vec[..., 1]
    return jnp.stack([c * x + s * y, -s * x + c * y, vec[..., 2]], axis=-1)


def relative_to_robot(view: PhysicsView, points):
    """[..., 3] world points as offsets from the pelvis, in its heading frame."""
    return to_heading_frame(points - view.root_pos, view.root_quat)


def proprioception(view: PhysicsView):
    """The robot's qpos without root x and y, then its qvel (HumanoidBench's observation)."""
    qpos = view.robot_qpos
    return jnp.concatenate([qpos[2:], view.robot_qvel])


def proprioception_size(layout) -> int:
    return len(layout.robot_qpos) - 2 + len(layout.robot_qvel)


# Scales that bring privileged physical quantities to order one.
FOOT_FORCE_SCALE = 1e-3  # N: the H1 weighs about 500 N
ACTUATOR_FORCE_SCALE = 1e-2  # N·m


def privileged_physics(view: PhysicsView):
    """What a critic may see beyond the policy: centre of mass, contacts, torques."""
    return jnp.concatenate([
        relative_to_robot(view, view.com_pos),
        to_heading_frame(view.com_vel, view.root_quat),
        view.foot_force * FOOT_FORCE_SCALE,
        view.actuator_force * ACTUATOR_FORCE_SCALE,
    ])


def site_distances(view: PhysicsView, sites: tuple[str, ...], point):
    """[len(sites)] distances (m) from each named site to a world point."""
    return jnp.stack([jnp.linalg.norm(view.site(s) - point) for s in sites])


def site_offsets(view: PhysicsView, sites: tuple[str, ...], point):
    """[3 * len(sites)] point minus each site, in the robot's heading frame."""
    return jnp.concatenate([to_heading_frame(point - view.site(s), view.root_quat) for s in sites])
