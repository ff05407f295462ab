"""The clip library in assets/motions: a table of its clips and their quality."""

from __future__ import annotations

from pathlib import Path

from metaworld_x.errors import UserError


def library_table(folder: Path, report: bool = False) -> str:
    """One row per .npz clip in `folder`: skill, source, frames, seconds (and, with `report`, quality and what the
    poses stand on: the share of airborne frames and the deepest the centre of mass goes past the support)."""
    from metaworld_x.motion.clip import load_clip
    from metaworld_x.motion.quality import Quality
    from metaworld_x.motion.support import support_trace
    from metaworld_x.robot import robot_spec

    model = robot_spec("h1").compile()
    paths = sorted(folder.glob("*.npz"))
    if not paths:
        return f"no clips in {folder}"
    header = ["clip", "skill", "source", "frames", "seconds"]
    if report:
        header += ["err mean cm", "err max cm", "penetr. cm", "skating cm/s", "limit viol.", "frames/s", "airborne",
                   "past support cm", "goals missed"]
    rows = []
    for path in paths:
        try:
            clip = load_clip(path, model)
        except UserError as error:
            rows.append([path.stem, "-", "INVALID", "-", "-"] + (["-"] * 9 if report else []) + [str(error)])
            continue
        row = [path.stem, clip.skill, clip.source, str(clip.num_frames), f"{clip.duration:.2f}"]
        if report:
            q = Quality(**clip.quality)
            missed = q.missed(tracking=clip.source == "mocap")
            support = support_trace(model, clip.qpos, clip.fps).summary()
            row += [
                f"{100 * q.keypoint_error_mean:.1f}", f"{100 * q.keypoint_error_max:.1f}",
                f"{100 * q.penetration:.2f}", f"{100 * q.skating:.2f}", str(q.limit_violations),
                f"{q.speed:.0f}", f"{support['airborne_share']:.0%}", f"{100 * max(-support['margin_min_m'], 0.0):.1f}",
                ", ".join(missed) or "none",
            ]
        rows.append(row)
    widths = [max(len(str(r[i])) for r in [header, *rows] if i < len(r)) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    for row in rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + ("  " + row[-1] if len(row) > len(header) else ""))
    return "\n".join(line.rstrip() for line in lines)
