"""MJX's plane-box contacts, made to match MuJoCo's C engine.

MJX-JAX 3.17 collides a box with a plane as a convex mesh and keeps only the
corners within 1 mm of the deepest one. MuJoCo C (`mjc_PlaneBox`), and MuJoCo
Warp after it, keep every corner on the plane's side, up to four. For a
humanoid this is the foot touching the floor: when a foot lands tilted by
more than 1 mm over its length (a fraction of a degree), MJX supports it on
one edge while C supports it on the whole sole, and the two engines part by
~1 m/s of joint velocity within a single 2 ms step.

`c_plane_box()` is a context manager that swaps in this C-equivalent
function while MJX traces a function; the MJX backend traces inside it.
"""

import contextlib
import threading

import jax.numpy as jnp
import numpy as np
from mujoco.mjx._src import collision_driver  # private: MJX's table of pair functions
from mujoco.mjx._src import math as mjx_math
from mujoco.mjx._src.collision_convex import collider
from mujoco.mjx._src.types import GeomType

MAX_CONTACTS = 4
INACTIVE_DISTANCE = 1.0  # metres: what MJX writes for a contact slot that is not in use

# the box's corners in mjc_PlaneBox's order: bit 0 picks x, bit 1 y, bit 2 z
_CORNER_SIGNS = np.asarray([[1 if i & b else -1 for b in (1, 2, 4)] for i in range(8)], np.float32)  # NumPy: no JAX on import


def _plane_box(plane, box):
    """Up to 4 contacts: the first box corners (in C's order) below the plane and in its lower half."""
    normal = plane.mat[:, 2]
    centre_height = jnp.dot(box.pos - plane.pos, normal)
    corners = (_CORNER_SIGNS * box.size) @ box.mat.T  # world offsets from the box centre
    offset = corners @ normal
    depth = centre_height + offset
    # geom margins are 0 in our models; C compares against the pair's margin
    candidate = (depth <= 0.0) & (offset <= 0.0)
    rank = jnp.cumsum(candidate) - 1
    slots = jnp.arange(MAX_CONTACTS)
    chosen = candidate[None, :] & (rank[None, :] == slots[:, None])  # [4, 8]
    used = chosen.any(axis=1)
    index = jnp.argmax(chosen, axis=1)
    dist = jnp.where(used, depth[index], INACTIVE_DISTANCE)
    pos = box.pos + corners[index] - 0.5 * dist[:, None] * normal
    frame = jnp.stack([mjx_math.make_frame(normal)] * MAX_CONTACTS)
    return dist, pos, frame


plane_box = collider(ncon=MAX_CONTACTS)(_plane_box)

_KEY = (GeomType.PLANE, GeomType.BOX)
_lock = threading.Lock()


@contextlib.contextmanager
def c_plane_box():
    """MJX traces plane-box collisions with the C engine's rule inside this block."""
    with _lock:
        original = collision_driver._COLLISION_FUNC[_KEY]
        collision_driver._COLLISION_FUNC[_KEY] = plane_box
        try:
            yield
        finally:
            collision_driver._COLLISION_FUNC[_KEY] = original


def traced_with_c_contacts(fn):
    """fn, with any MJX tracing it triggers done under `c_plane_box()`."""

    def wrapped(*args, **kwargs):
        with c_plane_box():
            return fn(*args, **kwargs)

    return wrapped


__all__ = ["c_plane_box", "plane_box", "traced_with_c_contacts"]
