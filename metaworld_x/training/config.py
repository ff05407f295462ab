"""A training run's settings: the PPO configuration (validated once, with derived sizes) and the run's options
(where it is kept, how it starts and when it stops), each a frozen dataclass."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from metaworld_x.errors import UserError
from metaworld_x.training.constraint import ConstraintConfig


@dataclass(frozen=True)
class PPOConfig:
    """Everything that decides a PPO run; the CLI is generated from it."""

    num_envs: int = 1024
    """Parallel simulations used for collection."""
    unroll_length: int = 20
    """Control steps each simulation runs between updates. With num_envs scaled up by the same factor, an iteration
    keeps its samples: on the CPU, 4096 worlds x 10 steps met walk's goals at 9.0M steps where 2048 x 20 did at 8.2M."""
    num_minibatches: int = 8
    """Minibatches per epoch; they split the simulations, so num_envs must be a multiple of it. Scaling num_envs up
    on a GPU, scale this too to keep the minibatch size."""
    num_epochs: int = 4
    """Passes over each collected batch."""
    total_env_steps: int = 5_000_000
    """Training budget in environment (control) steps, over all simulations."""
    learning_rate: float = 3e-4
    """Adam step size (the first one, with `desired_kl`). A fine-tune from a shipped expert is steadier at 1e-4."""
    desired_kl: float | None = None
    """Adapt the step size after every update toward this approximate KL between the policies before and after
    it (`adaptive_lr`; rsl_rl uses 0.01). None: a fixed step size."""
    max_grad_norm: float = 1.0
    """Global gradient-norm clip."""
    discounting: float = 0.97
    """Discount per control step."""
    gae_lambda: float = 0.95
    """GAE's λ (not the Lagrange multiplier)."""
    clipping_epsilon: float = 0.2
    """PPO ratio clip."""
    entropy_cost: float = 5e-3
    """Weight of the entropy bonus."""
    value_cost: float = 0.5
    """Weight of the value losses."""
    reward_scaling: float = 1.0
    """Multiplier on rewards and costs before GAE."""
    normalize_observations: bool = True
    """Keep running mean/std statistics of observations and normalise with them."""
    freeze_statistics: bool = False
    """Hold the observation statistics where training starts them (a fine-tune from a shipped policy: the shipped
    ones; the critics' from the warm-up unroll). Moving on, weighted by the samples already seen, they shift the
    shipped policy's inputs for it: 0.5M steps into a crawl fine-tune, its weights unchanged, they had moved by up to
    0.06 of a standard deviation and the expert's tracking error from home had grown from 9.8 to 11.9 cm."""
    critic_warmup_iterations: int | None = None
    """Iterations numbered below this train the critics only, the policy held (a fine-tune from a shipped
    policy starts at 0). Its fresh critics' first advantages are noise that would move a trained policy
    for nothing. None: `FRESH_CRITIC_WARMUP_ITERATIONS` from a shipped policy, none from scratch or a checkpoint
    (whose critics come with it)."""
    policy_hidden: tuple[int, ...] = (256, 128)
    """Policy MLP hidden sizes."""
    value_hidden: tuple[int, ...] = (256, 256)
    """Critic MLP hidden sizes (the critic sees the privileged state)."""
    seed: int = 0
    """Random seed for parameters, exploration and environments."""
    eval_every: int = 20
    """Evaluate every this many iterations (0: never)."""
    num_eval_envs: int = 16
    """Simulations used for evaluation."""
    eval_steps: int = 1000
    """Control steps of an evaluation episode."""
    checkpoint_every: int = 20
    """Write a checkpoint every this many iterations (0: only at the end)."""
    keep_checkpoints: int = 5
    """Newest checkpoints kept in the run folder, besides the best evaluated one (`checkpoint.prune`); 0 keeps all."""
    num_devices: int = 0
    """Local devices to shard the batch over (0: all)."""
    constraint: ConstraintConfig = field(default_factory=ConstraintConfig)
    """How imitation and task combine."""
    backend: Literal["cpu", "mjx"] = "cpu"
    """Physics backend: cpu (mujoco.batch) or mjx (GPU)."""

    def __post_init__(self):
        if self.desired_kl is not None and self.desired_kl <= 0:
            raise UserError(f"desired_kl must be a positive KL (e.g. 0.01) or None for a fixed step size, got {self.desired_kl}")
        if self.keep_checkpoints < 0:
            raise UserError(f"keep_checkpoints must be >= 0 (0 keeps every checkpoint), got {self.keep_checkpoints}")
        if self.critic_warmup_iterations is not None and self.critic_warmup_iterations < 0:
            raise UserError(f"critic_warmup_iterations must be >= 0, got {self.critic_warmup_iterations}")
        positive = ("num_envs", "unroll_length", "num_minibatches", "num_epochs", "total_env_steps")
        for name in positive:
            if getattr(self, name) <= 0:
                raise UserError(f"{name} must be positive, got {getattr(self, name)}")
        if self.num_envs % self.num_minibatches:
            fits = [m for m in range(1, self.num_minibatches * 2 + 1) if self.num_envs % m == 0]
            nearest = min(fits, key=lambda m: abs(m - self.num_minibatches))
            raise UserError(
                f"num_envs ({self.num_envs}) must split evenly into num_minibatches ({self.num_minibatches});"
                f" use num_minibatches={nearest} or num_envs={self.num_envs // self.num_minibatches * self.num_minibatches or self.num_minibatches}"
            )
        if self.total_env_steps < self.steps_per_iteration:
            raise UserError(
                f"total_env_steps ({self.total_env_steps}) is less than one iteration"
                f" (num_envs × unroll_length = {self.steps_per_iteration}); raise it or shrink the batch"
            )
        # 0 is allowed: a run that only measures (tests hold the policy with it)
        for name in ("learning_rate", "entropy_cost", "value_cost"):
            if getattr(self, name) < 0:
                raise UserError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.max_grad_norm <= 0 or self.clipping_epsilon <= 0:
            raise UserError(f"max_grad_norm and clipping_epsilon must be positive, got {self.max_grad_norm} and "
                            f"{self.clipping_epsilon}")
        if not 0 < self.discounting <= 1 or not 0 <= self.gae_lambda <= 1:
            raise UserError("discounting must be in (0, 1] and gae_lambda in [0, 1]")

    @property
    def steps_per_iteration(self) -> int:
        return self.num_envs * self.unroll_length

    @property
    def num_iterations(self) -> int:
        """Whole iterations in the budget; the remainder is not run."""
        return self.total_env_steps // self.steps_per_iteration

    @property
    def minibatch_envs(self) -> int:
        return self.num_envs // self.num_minibatches

    def check_devices(self, device_count: int) -> None:
        """Each device must hold whole minibatches of whole simulations."""
        if self.minibatch_envs % device_count:
            raise UserError(
                f"each minibatch ({self.minibatch_envs} simulations) must split evenly over {device_count} devices;"
                f" use num_envs a multiple of num_minibatches × {device_count}"
                f" (e.g. {self.num_minibatches * device_count * max(1, self.minibatch_envs // device_count)})"
            )


@dataclass(frozen=True)
class RunOptions:
    """Where a training run is kept, how it starts and when it stops: what `PPOConfig` leaves to the command."""

    run_dir: Path | None = None
    """Where checkpoints, metrics, TensorBoard files and the curve go (None: keep nothing)."""
    resume: bool = False
    """Continue from the newest checkpoint in run_dir that verifies (newer, corrupted ones are passed over with a
    warning); a UserError, with the run's metrics.jsonl untouched, where none does."""
    init_from: Path | None = None
    """A checkpoint (or a run folder: its newest) whose training state (networks, optimiser, normaliser,
    multiplier, step count) the run starts from with fresh environments, a fine-tune whose task settings may
    differ; or a shipped expert's folder (experts/<skill>): its policy and input statistics, with fresh critics,
    optimiser and multiplier (`warm_start`). A checkpoint in run_dir with `resume` takes precedence, so a killed
    fine-tune resumes where it stopped."""
    overwrite: bool = False
    """A fresh run (no `resume`) in a run_dir that holds checkpoints removes them and the old run's TensorBoard
    files; without it such a run is refused, since a later resume would pick up the old run."""
    stop_at: float | None = None
    """A `time.perf_counter()` deadline: the first iteration that ends after it is the last, with a checkpoint, so a
    run given minutes stops cleanly and `resume` continues it."""
    started_at: float | None = None
    """The `time.perf_counter()` at which the command began. Every iteration then logs `perf/setup_s`, the seconds
    spent before the training loop (imports, building the environments, the first compilations), summed over a
    resumed run's commands, so that `perf/wall_clock_s + perf/setup_s` is the wall clock from the command's start
    (scripts/time_to_goal.py)."""
    progress: bool = True
    """Show a progress bar (on the process that writes the run)."""
    tensorboard: bool = True
    """Also write TensorBoard scalars (run_dir/tensorboard); metrics.jsonl is written either way."""
    extra_meta: dict | None = None
    """Entries added to every checkpoint's meta record (an expert's spec, the run it started from)."""
