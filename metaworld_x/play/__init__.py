"""`metaworld-x play`: run a controller in a scene, watch it, record it, plot it.

One idea per module:
- `session`: one `metaworld-x play` run: the scenario, then the viewer or a
  headless recording (with a one-line fallback when no window can open).
- `scenario`: what is played (one expert in its tracking scene, or the router),
  as an env factory plus a `Controller`.
- `router_controller`: the router path: the instruction's task, router/<task>/,
  every installed expert mixed.
- `episode`: the episode runner: steps the env, logs reward, weights and
  per-body tracking error.
- `ghost`: a reference clip played kinematically as a translucent robot.
- `overlay`: the expert-weight bars and status lines drawn on frames.
- `video`: atomic .mp4 / .gif writing.
- `plots`: tracking error per body part and expert weights over time (PNG).
- `headless`: an episode rendered to video and plots, outcome printed.
- `live_session`: a live run's state (pacing, pause, shove, re-planning an
  instruction, possibly into another scene) and the report a viewer shows.
- `weights_history`: the last seconds of expert weights and their switches.
- `studio`: MuJoCo Studio's native window, or its web viewer (`--web`).
- `studio_sim`: the control loop as a Studio sim plugin.
- `studio_panels`: `play`'s panel in Studio (a viewer plugin).
- `studio_messages`: what the panel and the control loop exchange.
- `viewer`: the classic MuJoCo viewer loop with keys (`--classic`).
- `prompt`: the terminal thread that reads new instructions (classic viewer).

Nothing here is imported by `import metaworld_x`; the CLI imports it inside
`run()`.
"""
