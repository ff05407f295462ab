"""`metaworld-x snapshot`: render a scene with the robot in its home pose."""

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Snapshot:
    """Render a scene headless (mujoco.Renderer) with the robot in its home pose, to a PNG."""

    out: Path = Path("snapshot.png")
    """Where to write the PNG."""
    scene: str = "floor"
    """Scene name (see `metaworld-x info`)."""
    variant: str = "h1"
    """Robot variant: h1, or h1_hands."""
    robot_path: Path | None = None
    """A user's H1 MJCF instead of ours."""
    width: int = 960
    """Image width in pixels."""
    height: int = 540
    """Image height in pixels."""

    def run(self) -> None:
        from metaworld_x.atomic import check_writable
        from metaworld_x.cli.numbers import check_pixels

        check_pixels(self.width, self.height)
        check_writable(self.out, "--out")
        import mujoco

        from metaworld_x.render import render_frame, save_image
        from metaworld_x.scene import build_model

        model = build_model(self.scene, self.variant, self.robot_path)
        visual = model.vis.global_  # the off-screen framebuffer must hold the image asked for
        visual.offwidth, visual.offheight = max(visual.offwidth, self.width), max(visual.offheight, self.height)
        data = mujoco.MjData(model)
        mujoco.mj_resetDataKeyframe(model, data, 0)
        mujoco.mj_forward(model, data)
        save_image(render_frame(model, data, width=self.width, height=self.height), self.out)
        print(f"snapshot of scene {self.scene!r} ({self.variant}) written to {self.out}")
