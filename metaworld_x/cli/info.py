"""`metaworld-x info`: versions, devices, the robot and the scenes."""

from dataclasses import dataclass
from pathlib import Path

PACKAGES = (
    "metaworld-x", "mujoco", "mujoco-mjx", "jax", "jaxlib", "flax", "optax", "brax",
    "torch", "transformers", "gymnasium", "mink",
)


@dataclass(frozen=True)
class Info:
    """Print versions, compute devices, the robot's summary and the available scenes."""

    variant: str = "h1"
    """Robot variant: h1, or h1_hands (paddle hands for manipulation)."""
    robot_path: Path | None = None
    """A user's H1 MJCF (file, or folder with h1.xml) instead of ours, e.g. MuJoCo Menagerie's unitree_h1."""

    def run(self) -> None:
        import platform
        import sys
        from importlib import metadata

        from metaworld_x.robot import robot_spec

        robot = robot_spec(self.variant, self.robot_path).compile()  # bad input fails before any output
        print("versions")
        print(f"  python        {platform.python_version()} ({sys.executable})")
        for package in PACKAGES:
            try:
                version = metadata.version(package)
            except metadata.PackageNotFoundError:
                version = "not installed"
            print(f"  {package:<13} {version}")
        _print_devices()
        _print_robot(robot, self.variant, self.robot_path)
        _print_scenes()


def _print_devices() -> None:
    import os

    import jax

    print("devices")
    print(f"  jax backend   {jax.default_backend()}")
    for device in jax.devices():
        print(f"  {device.platform:<13} {device.device_kind} (id {device.id})")
    print(f"  cpu cores     {os.cpu_count()}")


def _print_robot(model, variant: str, robot_path: Path | None) -> None:
    import mujoco

    joints = [model.joint(i).name for i in range(model.njnt) if model.jnt_type[i] != mujoco.mjtJoint.mjJNT_FREE]
    print(f"robot ({variant}{', from ' + str(robot_path) if robot_path else ''})")
    print(f"  nq {model.nq}  nv {model.nv}  nu {model.nu}  mass {model.body_mass.sum():.2f} kg")
    print(f"  joints ({len(joints)}): {', '.join(joints)}")
    sites = [model.site(i).name for i in range(model.nsite)]
    print(f"  sites: {', '.join(sites)}")


def _print_scenes() -> None:
    from metaworld_x.scene import SCENES

    print("scenes")
    for name, placements in SCENES.items():
        props = ", ".join(p.prop for p in placements) or "floor only"
        print(f"  {name:<8} {props}")
