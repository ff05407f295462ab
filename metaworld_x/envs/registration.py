"""Gymnasium ids for the MetaWorld-X tasks.

Imported by `import metaworld_x`; it imports gymnasium only (entry points
are strings), so registering costs no jax or mujoco import.

    env = gymnasium.make("MetaWorldX/H1-Walk-v0", render_mode="rgb_array")
    envs = gymnasium.make_vec("MetaWorldX/H1-Walk-v0", num_envs=1024)  # one mujoco.batch
    env = gymnasium.make("MetaWorldX/H1-Walk-v0", perturb="push")       # or model, latency, noise, all

Every id, the experts' tracking ids too, takes `perturb=`: a suite of `metaworld_x.envs.perturb.SUITES`.
"""

from gymnasium.envs.registration import register, registry

ENTRY_POINT = "metaworld_x.envs.gym_env:MetaWorldXEnv"
VECTOR_ENTRY_POINT = "metaworld_x.envs.gym_env:MetaWorldXVectorEnv"

# (id, task, episode length in control steps at 50 Hz)
ENVIRONMENTS = (
    ("MetaWorldX/H1-Stand-v0", "stand", 1000),
    ("MetaWorldX/H1-Walk-v0", "walk", 1000),
    ("MetaWorldX/H1-Run-v0", "run", 1000),
    ("MetaWorldX/H1-Sit-v0", "sit", 1000),
    ("MetaWorldX/H1-Crawl-v0", "crawl", 1000),
    ("MetaWorldX/H1-Reach-v0", "reach", 1000),
    ("MetaWorldX/H1Hands-Carry-v0", "carry", 1000),
    ("MetaWorldX/H1Hands-Push-v0", "push", 500),
    ("MetaWorldX/H1Hands-Door-v0", "door", 1000),
    ("MetaWorldX/H1Hands-Fetch-v0", "fetch", 1000),
    ("MetaWorldX/H1-Rise-v0", "rise", 1000),
    ("MetaWorldX/H1-Turn-v0", "turn", 1000),
    ("MetaWorldX/H1-Stop-v0", "stop", 1000),
    # the sequential tasks: sub-goals in order, for a router (no expert is trained on one)
    ("MetaWorldX/H1-WalkSit-v0", "walk_sit", 1500),
    ("MetaWorldX/H1-RunCrawl-v0", "run_crawl", 1500),
    ("MetaWorldX/H1-WalkReach-v0", "walk_reach", 1500),
    ("MetaWorldX/H1-RiseWalk-v0", "rise_walk", 1500),
    ("MetaWorldX/H1Hands-WalkPush-v0", "walk_push", 1500),
    ("MetaWorldX/H1Hands-DoorSit-v0", "door_sit", 1500),
)
IDS = tuple(env_id for env_id, _, _ in ENVIRONMENTS)

for env_id, task, episode_length in ENVIRONMENTS:
    if env_id not in registry:  # re-importing (e.g. after importlib.reload) must not warn
        register(
            id=env_id,
            entry_point=ENTRY_POINT,
            vector_entry_point=VECTOR_ENTRY_POINT,
            kwargs={"task": task},
            max_episode_steps=episode_length,
        )

import metaworld_x.envs.tracking_registration  # noqa: E402,F401  (the experts' tracking ids)
