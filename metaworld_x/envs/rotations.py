"""Quaternion helpers in JAX; quaternions are (w, x, y, z), shapes [..., 4]."""

import jax.numpy as jnp


def conjugate(q):
    return q * jnp.array([1.0, -1.0, -1.0, -1.0], q.dtype)


def multiply(a, b):
    """Hamilton product a ⊗ b."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return jnp.stack([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ], axis=-1)


def angle_between(a, b):
    """[...] rotation angle (rad, in [0, π]) taking orientation a to b."""
    dot = jnp.abs(jnp.sum(a * b, axis=-1))
    return 2.0 * jnp.arccos(jnp.clip(dot, 0.0, 1.0))


def nlerp(a, b, t):
    """Normalised linear interpolation from a to b along the shorter arc; t [...] in [0, 1]."""
    b = jnp.where(jnp.sum(a * b, axis=-1, keepdims=True) < 0, -b, b)
    q = (1 - t)[..., None] * a + t[..., None] * b
    return q / jnp.linalg.norm(q, axis=-1, keepdims=True)


def rotate(q, v):
    """[..., 3] vectors v rotated by quaternions q."""
    qv = jnp.concatenate([jnp.zeros(v.shape[:-1] + (1,), v.dtype), v], axis=-1)
    return multiply(multiply(q, qv), conjugate(q))[..., 1:]
