"""A policy folder loaded and run in a fresh interpreter where importing the training code fails.

The interpreter's first act is a meta-path finder that raises ImportError for `metaworld_x.training` and every
module under it, so a load that reached for the trainer, however indirectly, fails there rather than passing
because the test process had imported it already.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

_SCRIPT = r"""
import importlib.abc, json, sys

class NoTrainingCode(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "metaworld_x.training" or name.startswith("metaworld_x.training."):
            raise ImportError(f"{name} is training code, which a shipped policy must run without")
        return None

sys.meta_path.insert(0, NoTrainingCode())
try:
    import metaworld_x.training  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("the finder did not stop the training code from importing")

import numpy as np
from metaworld_x.experts.policy import act, load_policy

params, spec = load_policy(sys.argv[1])
obs = np.asarray(json.loads(sys.stdin.read()), np.float32)
action = np.asarray(act(params, obs))
loaded = sorted(m for m in sys.modules if m.startswith("metaworld_x.training"))
print(json.dumps({"action": action.tolist(), "action_size": spec["action_size"], "training_modules": loaded}))
"""


def act_without_training(policy_dir: Path, obs: np.ndarray) -> tuple[np.ndarray, dict]:
    """(actions [n, a] of the policy in `policy_dir` for obs [n, o], the run's record), computed where the training
    code cannot be imported."""
    result = subprocess.run([sys.executable, "-c", _SCRIPT, str(policy_dir)],
                            input=json.dumps(np.asarray(obs).tolist()), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads(result.stdout.strip().splitlines()[-1])
    return np.asarray(record["action"], np.float32), record
