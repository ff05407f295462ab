"""From a policy's normalised action to the position servos' targets."""

from dataclasses import dataclass

import jax.numpy as jnp
import mujoco
import numpy as np


@dataclass(frozen=True)
class ActionMap:
    """target = clip(home + action * scale, low, high), per actuator.

    Zero action holds the home pose, so an untrained policy, or a router's
    mixture of experts that disagree, starts from a stance the servos hold.
    `scale` is a fraction of each joint's half range, so one action unit means
    as much for a hip with a narrow range as for a shoulder with a wide one.
    Targets are clipped to the joint range: a target past a joint limit would
    press the joint into its limit with the servo's full gain, and MuJoCo would
    clamp it to ctrlrange anyway; clipping here keeps the recorded ctrl equal
    to the applied one.
    """

    home: tuple[float, ...]
    scale: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]

    @staticmethod
    def from_model(model: mujoco.MjModel, scale_fraction: float, keyframe: int = 0) -> "ActionMap":
        low, high = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
        if not model.actuator_ctrllimited.all():
            raise ValueError("every actuator needs a ctrlrange: actions are mapped into it")
        home = model.key_ctrl[keyframe]
        return ActionMap(
            home=tuple(map(float, home)),
            scale=tuple(map(float, scale_fraction * (high - low) / 2)),
            low=tuple(map(float, low)),
            high=tuple(map(float, high)),
        )

    @property
    def size(self) -> int:
        return len(self.home)

    def __call__(self, action):
        """[..., nu] actions in [-1, 1] -> [..., nu] servo targets (rad)."""
        target = jnp.asarray(self.home) + action * jnp.asarray(self.scale)
        return jnp.clip(target, jnp.asarray(self.low), jnp.asarray(self.high))

    def home_array(self) -> np.ndarray:
        return np.asarray(self.home, np.float32)
