"""What the box tasks (carry, push) share: the paddle palms and the box's observation."""

import jax.numpy as jnp

from metaworld_x.envs.observations import relative_to_robot, site_offsets, to_heading_frame
from metaworld_x.scene.props import BOX_HALF_SIZE

PALMS = ("left_palm", "right_palm")
# A palm pressed on the box's side is about this far (m) from the box's centre.
HOLDING_DISTANCE = BOX_HALF_SIZE[1] + 0.05
BOX_SITES = ("box",) + PALMS
BOX_JOINTS = ("box",)


def box_features(view, target_site: str):
    """[21] the box's position, velocity and up axis, the target, and the palms, relative to the robot."""
    box, target = view.site("box"), view.site(target_site)
    heading = view.root_quat
    return jnp.concatenate([
        relative_to_robot(view, box),
        to_heading_frame(view.joint_qvel("box")[:3], heading),
        to_heading_frame(view.site_rot("box")[:, 2], heading),
        relative_to_robot(view, target),
        to_heading_frame(target - box, heading),
        site_offsets(view, PALMS, box),
    ])
