"""Gymnasium ids for the experts' own tracking tasks: the observation a shipped expert reads.

The task ids (`MetaWorldX/H1-Walk-v0`, ...) observe proprioception and the
task's features; an expert was trained on its tracking task, which also
observes its reference clip's next frames (206 numbers for walk). These ids
build that task from the expert's spec, so a shipped policy drives them
directly:

    env = gymnasium.make("MetaWorldX/H1-WalkTracking-v0")
    envs = gymnasium.make_vec("MetaWorldX/H1-WalkTracking-v0", num_envs=64)

Imported by `metaworld_x.envs.registration`; it imports gymnasium only.
Episodes end where the tracking task ends them (its own episode length,
reported as truncation), so no TimeLimit wrapper is registered.
"""

from gymnasium.envs.registration import register, registry

ENTRY_POINT = "metaworld_x.envs.tracking_gym:ExpertTrackingEnv"
VECTOR_ENTRY_POINT = "metaworld_x.envs.tracking_gym:ExpertTrackingVectorEnv"

# (id, expert skill); the prefix names the robot variant the expert's scene uses
TRACKING_ENVIRONMENTS = (
    ("MetaWorldX/H1-StandTracking-v0", "stand"),
    ("MetaWorldX/H1-WalkTracking-v0", "walk"),
    ("MetaWorldX/H1-RunTracking-v0", "run"),
    ("MetaWorldX/H1-SitTracking-v0", "sit"),
    ("MetaWorldX/H1-RiseTracking-v0", "rise"),
    ("MetaWorldX/H1-TurnTracking-v0", "turn"),
    ("MetaWorldX/H1-StopTracking-v0", "stop"),
    ("MetaWorldX/H1-CrawlTracking-v0", "crawl"),
    ("MetaWorldX/H1-ReachOneHandTracking-v0", "reach_one_hand"),
    ("MetaWorldX/H1-ReachTwoHandsTracking-v0", "reach_two_hands"),
    ("MetaWorldX/H1Hands-CarryTracking-v0", "carry"),
    ("MetaWorldX/H1Hands-PushTracking-v0", "push"),
    ("MetaWorldX/H1Hands-DoorTracking-v0", "door"),
)
TRACKING_IDS = tuple(env_id for env_id, _ in TRACKING_ENVIRONMENTS)

for env_id, skill in TRACKING_ENVIRONMENTS:
    if env_id not in registry:  # re-importing must not warn
        register(id=env_id, entry_point=ENTRY_POINT, vector_entry_point=VECTOR_ENTRY_POINT, kwargs={"skill": skill})
