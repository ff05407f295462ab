"""What the box tasks (carry, push) share: the paddle palms and the box's observation."""

import jax.numpy as jnp
import numpy as np

from metaworld_x.envs.observations import relative_to_robot, site_offsets, to_heading_frame
from metaworld_x.envs.rewards import closeness
from metaworld_x.errors import UserError
from metaworld_x.scene.props import BOX_HALF_SIZE

PALMS = ("left_palm", "right_palm")
# A palm pressed on the box's side is about this far (m) from the box's centre.
HOLDING_DISTANCE = BOX_HALF_SIZE[1] + 0.05
BOX_SITES = ("box",) + PALMS
BOX_JOINTS = ("box",)

# Where a palm grips the box, in the box's frame: on a side face across y, its centre no further out than the
# H1's hand sphere (radius 3.5 cm, 2 cm behind the palm) lets it come, nor further in than a paddle that has
# slid round the edge; low enough along z that the 12 cm paddle stays on the 30 cm face. Along x, within a few
# cm of the middle: the hand spheres touch the faces at points, and a box held by the line through them pivots
# about it until its centre hangs under it (a policy holding 10-15 cm behind the middle pitched the box 50-75°
# mid-walk and dropped it). A palm on the box's top, which "near the box" pays in full, is 6-10 cm off it.
GRIP_ACROSS = (BOX_HALF_SIZE[1] - 0.06, BOX_HALF_SIZE[1] + 0.04)
GRIP_ALONG = 0.04
GRIP_UP = BOX_HALF_SIZE[2] - 0.06
# The most the box may lean (degrees) and still count as set down. Distance alone cannot tell: a box rolled 90°
# about the line between the palms, as an early carry expert set it down, keeps its footprint and height.
UPRIGHT_TILT_DEG = 15.0


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


def _off_face(palm_in_box, side):
    """How far (m) a palm (box frame) is from the gripping region of the face on `side` (+1 or -1) of y."""
    across = side * palm_in_box[1]
    return jnp.linalg.norm(jnp.stack([
        jnp.maximum(jnp.abs(palm_in_box[0]) - GRIP_ALONG, 0.0),
        jnp.maximum(GRIP_ACROSS[0] - across, 0.0) + jnp.maximum(across - GRIP_ACROSS[1], 0.0),
        jnp.maximum(jnp.abs(palm_in_box[2]) - GRIP_UP, 0.0),
    ]))


def _on_face(distance):
    """1 on the face; half of it falls off within 10 cm, so a palm resting on the box's top earns little, and half
    over a metre, so a palm reaching from afar still has a way to go."""
    return 0.5 * (closeness(distance, near=0.0, margin=0.1) + closeness(distance, near=0.0, margin=1.0))


def palms_in_box(view):
    """(left, right): each palm's position (m) in the box's frame, over any leading batch axes of `view`."""
    rot, centre = view.site_rot("box"), view.site("box")
    return tuple(jnp.einsum("...ji,...j->...i", rot, view.site(palm) - centre) for palm in PALMS)


def grip(view):
    """Both palms on opposite side faces of the box: 1 when both are, the product of `_on_face` for each.

    Either palm may take either face, so the box's yaw by half a turn does not matter."""
    left, right = palms_in_box(view)
    score = lambda side: _on_face(_off_face(left, side)) * _on_face(_off_face(right, -side))
    return jnp.maximum(score(1.0), score(-1.0))


def resting_place(view):
    """Where the box's centre is when it rests on the middle of the table top (the "table" site)."""
    return view.site("table") + jnp.asarray([0.0, 0.0, BOX_HALF_SIZE[2]])


def level(view):
    """The box upright: 1 within 8° of it, falling linearly to 0 at 47° (by the cosine of its tilt)."""
    return closeness(1.0 - view.site_rot("box")[2, 2], near=0.01, margin=0.3)


def check_max_tilt(max_tilt_deg: float) -> None:
    """Refuse a tilt limit that cannot mean "upright": 0° no box at rest meets, 90° or more a box on its side does."""
    if not 0.0 < max_tilt_deg < 90.0:
        raise UserError(f"max_tilt_deg must be between 0 and 90 degrees (exclusive), got {max_tilt_deg}; "
                        f"the default is {UPRIGHT_TILT_DEG}")


def upright(view, max_tilt_deg: float = UPRIGHT_TILT_DEG):
    """Whether the box's top faces up, leaning at most `max_tilt_deg` from the vertical."""
    return view.site_rot("box")[2, 2] >= np.cos(np.deg2rad(max_tilt_deg))
