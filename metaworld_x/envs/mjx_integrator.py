"""MJX's implicit-in-velocity integrator, made to match MuJoCo's C engine.

MuJoCo C (`mjd_actuator_vel`) and MuJoCo Warp leave out of the implicit
damping matrix every actuator whose force is clamped by its forcerange: a
saturated servo's force no longer depends on velocity. MJX-JAX 3.17's
`deriv_smooth_vel` keeps them, so with our force-limited PD servos the two
engines part by ~0.2 rad/s in a single 2 ms step whenever a servo saturates
(the ankles, limited to 40 N·m, saturate at 0.07 rad of error). This module
is MJX's `implicit` with that one rule added, so both backends integrate alike.
"""

import jax
import jax.numpy as jnp
import mujoco
from mujoco.mjx._src import support  # private: full_m / is_sparse, as mjx.implicit uses
from mujoco.mjx._src.forward import _advance  # private: mjx.implicit's own last step

AFFINE_GAIN = int(mujoco.mjtGain.mjGAIN_AFFINE)
AFFINE_BIAS = int(mujoco.mjtBias.mjBIAS_AFFINE)
NO_DYNAMICS = int(mujoco.mjtDyn.mjDYN_NONE)


def smooth_velocity_derivative(m, d) -> jax.Array:
    """[nv, nv] d(qfrc_actuator + qfrc_passive)/d qvel, skipping clamped actuators."""
    bias_vel = jnp.where(m.actuator_biastype == AFFINE_BIAS, m.actuator_biasprm[:, 2], 0.0)
    gain_vel = jnp.where(m.actuator_gaintype == AFFINE_GAIN, m.actuator_gainprm[:, 2], 0.0)
    ctrl = d.ctrl.at[m.actuator_dyntype != NO_DYNAMICS].set(d.act)
    low, high = m.actuator_forcerange[:, 0], m.actuator_forcerange[:, 1]
    clamped = m.actuator_forcelimited & ((d.actuator_force <= low) | (d.actuator_force >= high))
    vel = jnp.where(clamped, 0.0, bias_vel + gain_vel * ctrl)
    moment = d._impl.actuator_moment
    qderiv = moment.T @ (moment * vel[:, None]) - jnp.diag(m.dof_damping)
    if m.ntendon:
        qderiv -= d._impl.ten_J.T @ jnp.diag(m.tendon_damping) @ d._impl.ten_J
    return qderiv


def implicit_fast(m, d):
    """One implicitfast step (velocity-implicit actuator and joint damping), as MuJoCo C does it."""
    qm = support.full_m(m, d) if support.is_sparse(m) else d._impl.M
    qm = qm - m.opt.timestep * smooth_velocity_derivative(m, d)
    factor = jax.scipy.linalg.cho_factor(qm)
    qacc = jax.scipy.linalg.cho_solve(factor, d.qfrc_smooth + d.qfrc_constraint)
    return _advance(m, d, d.act_dot, qacc)
