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
- `viewer`: the interactive MuJoCo viewer loop with keys.
- `prompt`: the terminal thread that reads new instructions.

Nothing here is imported by `import metaworld_x`; the CLI imports it inside
`run()`.
"""
