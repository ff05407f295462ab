"""Rebuild the shipped reference clips in assets/motions from the shared mocap and the keyframes.

    python scripts/make_motion_library.py [--only walk run] [--out assets/motions]

Each recipe names its source file (under the shared mocap folder), the
segment kept and the skill it serves; keyframed clips come from
`metaworld_x.motion.keyframes.KEYFRAMED`, and gait transitions from two of the
library's looping clips (`metaworld_x.motion.edits.gait_transition`), after those are
built. The source files are read, never copied. Needs ../shared/mocap (or METAWORLD_X_SHARED) for the mocap clips.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from metaworld_x.errors import UserError
from metaworld_x.paths import MOTIONS_DIR, shared_dir

CMU = (
    "CMU Graphics Lab Motion Capture Database: free for research; may be included in commercially-sold "
    "products, but not resold as data, even converted",
    "The data used in this project was obtained from mocap.cs.cmu.edu. "
    "The database was created with funding from NSF EIA-0196217.",
)
DEEPMIMIC = ("MIT", "DeepMimic reference motions, Copyright (c) 2018 Xue Bin Peng (github.com/xbpeng/DeepMimic)")
OMOMO = (
    "research use only (OMOMO dataset; redistributed in holosoma-retargeting 0.1.0 demo data)",
    "OMOMO: J. Li, J. Wu, C. K. Liu, 'Object Motion Guided Human Motion Synthesis', ACM TOG (SIGGRAPH Asia) 2023",
)


@dataclass(frozen=True)
class Recipe:
    """One mocap clip of the library."""

    name: str
    """File stem in assets/motions."""
    skill: str
    """Skill the clip serves."""
    source: str
    """Path under the shared mocap folder."""
    licence: tuple[str, str]
    """(licence, attribution)."""
    start: float = 0.0
    """Segment start (s)."""
    end: float | None = None
    """Segment end (s); None: the end of the file."""
    rate: float = 1.0
    """Playback rate: the same poses this many times as fast, where the task needs more speed than the person."""
    hover_height: float | None = None
    """A foot held still this high (m) or lower stands (`ContactConfig.hover_height`): mocap whose foot floats."""


RECIPES = (
    # Quiet standing. 131_01's first 1.1 s steps twice and ends with the right foot lifting: a one-shot clip
    # holds its last frame, so every episode on it asked for a staggered stance with a foot 2.7 cm up, and the
    # stand expert's late falls (from step 715 of 1000) all started on that clip.
    Recipe("stand", "stand", "cmu/131_02.bvh", CMU, 0.0, 0.32),
    Recipe("stand_2", "stand", "cmu/131_02.bvh", CMU, 9.5, 10.35),
    Recipe("walk", "walk", "deepmimic/humanoid3d_walk.txt", DEEPMIMIC),
    # The run task (HumanoidBench's h1-run) rewards 5 m/s; the person runs at 3.4 m/s, which played
    # perfectly scores 703 per 1000 steps against a bar of 700. At 1.5x: 5.1 m/s, cadence 3.8 steps/s. At 1.3x
    # (4.4 m/s) the run expert, held to the clip, earned 0.78 a step where from home, the clip
    # re-anchored onto it, it ran its own 5.1 m/s for 0.85 with the same servo effort, and from the clip's
    # first frame it scored 679, under the bar.
    Recipe("run", "run", "deepmimic/humanoid3d_run.txt", DEEPMIMIC, rate=1.5),
    Recipe("run_jog", "run", "deepmimic/humanoid3d_jog.txt", DEEPMIMIC),
    # h1-crawl rewards 1 m/s; the crawl moves at 0.24 m/s (715 per 1000 steps played perfectly, bar 700).
    Recipe("crawl", "crawl", "deepmimic/humanoid3d_crawl.txt", DEEPMIMIC, rate=1.6),
    Recipe("carry", "carry", "omomo/sub3_largebox_003.npz", OMOMO, 1.8, 4.6),
    Recipe("pickup", "pickup", "omomo/sub3_largebox_003.npz", OMOMO, 0.0, 2.2),
    # The whole take as one clip: squat, grasp the box on the floor, stand up with it, carry it and set it
    # down. The carry clip alone starts with the box in the hands, which no expert puts there (fetch 0/10).
    # The person's left foot floats 6-8 cm above the floor from the lift on, also where it stands still between
    # steps, so it is never pinned and the clip hops on the right foot. hover_height=0.1 pins it, but
    # the carry expert fine-tuned on that clip scored 6/10 from home (9/10 shipped), and (with
    # GripConfig.balance_smoothing_s 0.25, without which the pinned clip's pelvis jumps 9-10 cm in a frame at
    # five steps) 5/10 after 10.5M steps: not shipped.
    Recipe("pickup_carry", "carry", "omomo/sub3_largebox_003.npz", OMOMO, 0.0, 4.6),
    # reach_one_hand is keyframed (metaworld_x.motion.keyframes): DeepMimic's punch, the only one-arm reach
    # here, lunges 1.3 m and asks the right shoulder for more than its servo range; no policy learned it.
    # A real two-hand reach: the box raised forward to head height (the shared mocap has no free-hand one).
    Recipe("reach_two_hands", "reach_two_hands", "omomo/sub10_largebox_049.npz", OMOMO, 5.2, 7.2),
)

# (clip name, skill, first cycle, second cycle): made from the library's own clips, so they come last.
# run_start speeds up from the walk into the run, so that the run expert can start from the home pose.
TRANSITIONS = (("run_start", "run", "walk", "run"),)
# (clip name, skill, cycle): the cycle started from standing in the home pose, where a router starts every
# expert. crawl_start goes down onto hands and knees over 2 s: the crawl cycle alone never stands.
# run_rest starts the sprint from standing: run_start begins mid-stride at 1 m/s, 0.31 m from the home pose,
# and reaches 5 m/s 0.75 s into its speed-up. The speed itself rises over 7 s to the run's 5.1 m/s at its cadence,
# by at most 1.4 m/s² (speed_blend): the run expert, paid for speed, reached 4.4 m/s from home in about 4.5 s. Blending
# cadence and stride instead, the clip stood for 1.2 s of a 4 s ramp and then asked for 2.6 m/s².
# 25 s long, so that an episode started anywhere in the run expert's start window (its first 4 s) runs its 1000
# steps on the clip: at 21 s, starts after 1 s ran off the end into a held mid-stride frame and were ended there.
# The last entry is the TransitionConfig timing.
FROM_REST = (
    ("crawl_start", "crawl", "crawl", {"before_s": 0.5, "ramp_s": 2.0}),
    ("run_rest", "run", "run", {"before_s": 0.0, "ramp_s": 7.0, "speed_blend": True, "total_s": 25.0}),
)

# (clip name, skill, cycle, timing): the cycle slowed into a stop in the home pose (`to_rest`), standing after.
# The shared mocap's one stop (CMU 131_02) ends a stylised walk at 0.36 m/s; a router hands over at the walk's 1 m/s.
# walk_stop stops in two steps and 0.7 m over 1.2 s, and stands until 4 s.
TO_REST = (("walk_stop", "stop", "walk", {"before_s": 0.0, "ramp_s": 1.5, "total_s": 4.0, "speed_blend": True}),)

# (clip name, clip, grip, lead-out): a one-shot clip led into from the home pose by keyed steps
# (metaworld_x.motion.edits.lead_in), then with grip its hands closed on the scene's box and the box put where they
# pick it up (metaworld_x.motion.edits.grip), and with lead-out ended standing in the home pose
# (metaworld_x.motion.edits.lead_out).
# pickup_carry's first frame ends the person's step up to the box: feet 7-9 cm wider than home, hips bent 0.9 rad.
# The person's hands hold OMOMO's larger box 4-11 cm outside our box's faces, and reaching for it with shorter arms
# the IK leant the robot 0.3 m past its toes: the grip, balanced, fits the two together. Its last frame sets the
# box on the table bent 46° over it, one foot in the air (the person's floating left foot, never pinned: see the
# pickup_carry recipe); a lead-out would let go and stand up, but the carry expert
# fine-tuned on it for 11.2M steps scored 7/10 from the clip and 4/10 from home, so the shipped clip
# (and the carry expert) end at the set-down.
LEAD_INS = (("pickup_carry_start", "pickup_carry", True, False),)
# (clip name, skill, get-up source, cycle, GetDownConfig fields): standing in the home pose, getting down as a real
# get-up played backwards, then the cycle (metaworld_x.motion.edits.get_down). crawl_start's blend lifted the feet off
# the floor half-way down, and no policy followed it from home. 21 s: the crawl expert's 300-step episodes end well
# inside it. A clip's length is in every observation (the phase is time / duration), so lengthening it changes
# what a trained expert sees at every frame: at 25 s the shipped crawl expert scored 3/10 from home instead of 0/10.
GET_DOWNS = (("crawl_get_down", "crawl", "deepmimic/humanoid3d_getup_facedown.txt", "crawl", {"total_s": 25.0}),)
# (clip name, expert folder under experts/): the clip's opening remade from the expert's best rollout from home
# (metaworld_x.experts.simulated_opening), after the stages above have built it. crawl_get_down's kinematic dive is
# somewhere no body goes: no clip start before 1.6 s survived it, while the expert got down from home in
# every episode. 25 s long, so that a 1000-step episode started in its first 4 s stays on the clip. The shipped clip's
# opening comes from an earlier crawl expert (its fingerprint is in the clip's info); a rebuild with a later
# expert gives a different one.
SIMULATED_OPENINGS = (("crawl_get_down", "crawl"),)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="clip names to rebuild (default all)")
    parser.add_argument("--out", type=Path, default=MOTIONS_DIR, help="output folder")
    args = parser.parse_args(argv)
    try:
        build(args.out, set(args.only) if args.only else None)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def build(out: Path, only: set[str] | None = None) -> None:
    from metaworld_x.motion import load_human_motion
    from metaworld_x.motion.clip import read_clip, save_clip
    from metaworld_x.motion.contacts import ContactConfig
    from metaworld_x.motion.edits.gait_transition import TransitionConfig, from_rest, gait_transition, to_rest
    from metaworld_x.motion.edits.get_down import GetDownConfig, get_down
    from metaworld_x.motion.edits.grip import with_grip
    from metaworld_x.motion.edits.lead_in import with_lead_in
    from metaworld_x.motion.edits.lead_out import with_lead_out
    from metaworld_x.motion.keyframes import KEYFRAMED, compose
    from metaworld_x.motion.retarget import RetargetConfig, SourceInfo, retarget
    from metaworld_x.paths import EXPERTS_DIR
    from metaworld_x.robot import robot_spec
    from metaworld_x.experts.simulated_opening import with_simulated_opening

    model = robot_spec("h1").compile()
    recipes = [r for r in RECIPES if only is None or r.name in only]
    keyframed = [k for k in KEYFRAMED if only is None or k in only]
    transitions = [t for t in TRANSITIONS if only is None or t[0] in only]
    from_rest_clips = [t for t in FROM_REST if only is None or t[0] in only]
    to_rest_clips = [t for t in TO_REST if only is None or t[0] in only]
    lead_ins = [t for t in LEAD_INS if only is None or t[0] in only]
    get_downs = [t for t in GET_DOWNS if only is None or t[0] in only]
    openings = [t for t in SIMULATED_OPENINGS if only is None or t[0] in only]
    mocap = shared_dir()
    if (recipes or get_downs) and (mocap is None or not (mocap / "mocap").is_dir()):
        raise UserError("the shared mocap folder (../shared/mocap or $METAWORLD_X_SHARED/mocap) is missing")
    for recipe in recipes:
        clock = time.perf_counter()
        path = mocap / "mocap" / recipe.source
        source = SourceInfo(kind="mocap", file=path.name, licence=recipe.licence[0], attribution=recipe.licence[1])
        config = RetargetConfig(contacts=ContactConfig(hover_height=recipe.hover_height))
        clip = retarget(load_human_motion(path), recipe.skill, model=model, config=config, source=source,
                        start=recipe.start, end=recipe.end, playback_rate=recipe.rate, progress=True)
        _report(save_clip(clip, out / f"{recipe.name}.npz"), clip, time.perf_counter() - clock)
    for name in keyframed:
        clock = time.perf_counter()
        clip = compose(KEYFRAMED[name], model=model, progress=True)
        _report(save_clip(clip, out / f"{name}.npz"), clip, time.perf_counter() - clock)
    for name, skill, first, second in transitions:
        clock = time.perf_counter()
        clip = gait_transition(read_clip(out / f"{first}.npz"), read_clip(out / f"{second}.npz"), skill, model=model,
                               progress=True)
        _report(save_clip(clip, out / f"{name}.npz"), clip, time.perf_counter() - clock)
    for name, skill, cycle, timing in from_rest_clips:
        clock = time.perf_counter()
        clip = from_rest(read_clip(out / f"{cycle}.npz"), skill, model=model, config=TransitionConfig(**timing),
                         progress=True)
        _report(save_clip(clip, out / f"{name}.npz"), clip, time.perf_counter() - clock)
    for name, skill, cycle, timing in to_rest_clips:
        clock = time.perf_counter()
        clip = to_rest(read_clip(out / f"{cycle}.npz"), skill, model=model, config=TransitionConfig(**timing),
                       progress=True)
        _report(save_clip(clip, out / f"{name}.npz"), clip, time.perf_counter() - clock)
    for name, source_clip, grip, lead_out in lead_ins:
        clock = time.perf_counter()
        clip = with_lead_in(read_clip(out / f"{source_clip}.npz"), model=model, progress=True)
        if grip:
            clip = with_grip(clip, model=model, progress=True)
        if lead_out:
            clip = with_lead_out(clip, model=model, progress=True)
        _report(save_clip(clip, out / f"{name}.npz"), clip, time.perf_counter() - clock)
    for name, skill, get_up_source, cycle, timing in get_downs:
        clock = time.perf_counter()
        path = mocap / "mocap" / get_up_source
        source = SourceInfo(kind="mocap", file=path.name, licence=DEEPMIMIC[0], attribution=DEEPMIMIC[1])
        get_up = retarget(load_human_motion(path), skill, model=model, source=source)
        clip = get_down(get_up, read_clip(out / f"{cycle}.npz"), skill, model=model, config=GetDownConfig(**timing),
                        progress=True)
        _report(save_clip(clip, out / f"{name}.npz"), clip, time.perf_counter() - clock)
    for name, expert in openings:
        clock = time.perf_counter()
        clip = with_simulated_opening(read_clip(out / f"{name}.npz"), EXPERTS_DIR / expert, model=model, progress=True)
        _report(save_clip(clip, out / f"{name}.npz"), clip, time.perf_counter() - clock)


def _report(path: Path, clip, seconds: float) -> None:
    q = clip.quality
    print(
        f"{path.name:<22} {clip.skill:<16} {clip.num_frames:4d} frames  err {100 * q['keypoint_error_mean']:.1f}/"
        f"{100 * q['keypoint_error_max']:.1f} cm  pen {100 * q['penetration']:.2f} cm  skate "
        f"{100 * q['skating']:.2f} cm/s  limits {q['limit_violations']}  {q['speed']:.0f} fr/s  ({seconds:.1f} s)"
    )


if __name__ == "__main__":
    sys.exit(main())
