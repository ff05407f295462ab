"""The experts: one policy per skill, trained to move like its clip while solving its task.

- `specs`: the library's recipes (`ExpertSpec`, one per skill), and a spec read back from a shipped folder;
- `environment`: an expert's tracking task and its parallel environments;
- `training`: imitation-constrained PPO from a spec to a shipped folder (policy, spec.json, metrics.json);
- `policy`: a trained policy as a pure function, loadable without the training code;
- `installed`: the experts installed in a folder, loaded as one set with a hash of each policy;
- `catalog`: each skill described in plain English, as the router's language prior reads it;
- `agent`: a shipped expert acting in a gymnasium env;
- `own_motion`: a spec derived from a user's own clip;
- `simulated_opening`: a clip whose opening is replaced by what its expert really does from home.

Importing this package imports none of them.
"""
