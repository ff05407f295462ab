"""World-model configuration: a frozen dataclass, validated once."""

from dataclasses import dataclass
from typing import Literal

from metaworld_x.errors import UserError


@dataclass(frozen=True)
class WorldModelConfig:
    """Everything that decides the latent dynamics model and its training."""

    latent_size: int = 64
    """Size of the latent state z; a multiple of simnorm_group when latent_norm is simnorm."""
    latent_norm: Literal["simnorm", "layernorm"] = "simnorm"
    """Normalisation of encoder and dynamics outputs (TD-MPC2 uses simplicial normalisation)."""
    simnorm_group: int = 8
    """Size of each softmax group of SimNorm."""
    encoder_hidden: tuple[int, ...] = (128,)
    """Encoder MLP hidden sizes."""
    hidden: tuple[int, ...] = (128, 128)
    """Hidden sizes of the dynamics, reward, Q, termination and decoder heads."""
    num_q: int = 5
    """Heads of the Q ensemble."""
    num_bins: int = 101
    """Bins of the two-hot (symlog) reward and value distributions."""
    value_range: float = 10.0
    """The bins span [-value_range, value_range] in symlog space (±22026 in real units at 10)."""
    horizon: int = 5
    """Steps H of the multi-step latent-consistency loss."""
    rho: float = 0.5
    """Weight ρ^t of the step-t losses within the horizon."""
    discount: float = 0.99
    """Discount of the Q ensemble's temporal-difference targets."""
    consistency_coef: float = 20.0
    """Weight of the latent-consistency loss."""
    reward_coef: float = 0.1
    """Weight of the reward cross-entropy."""
    value_coef: float = 0.1
    """Weight of the Q-ensemble cross-entropy."""
    termination_coef: float = 1.0
    """Weight of the termination head's binary cross-entropy."""
    decoder_coef: float = 1.0
    """Weight of the observation decoder's squared error; the router reads decoded observations in imagination."""
    target_encoder: Literal["stop_grad", "ema"] = "stop_grad"
    """Consistency target: the online encoder behind a stop-gradient (TD-MPC2) or its EMA copy."""
    target_tau: float = 0.01
    """EMA rate of the target Q ensemble (and target encoder when target_encoder is ema)."""
    learning_rate: float = 3e-4
    """Adam step size."""
    max_grad_norm: float = 20.0
    """Global gradient-norm clip."""
    batch_size: int = 128
    """Windows per gradient step."""
    seed: int = 0
    """Random seed for parameters and sampling."""
    log_every: int = 10
    """Record the training metrics every this many steps."""
    fast_compile: bool = False
    """Compile without XLA's LLVM optimisation: about 2.5x faster compiles on CPU, about 3x slower steps (tests, short runs)."""

    def __post_init__(self):
        for name in ("encoder_hidden", "hidden"):  # lists (from JSON or a CLI) would make the config unhashable
            object.__setattr__(self, name, tuple(int(h) for h in getattr(self, name)))
        for name in ("latent_size", "num_q", "num_bins", "horizon", "batch_size", "log_every"):
            if getattr(self, name) <= 0:
                raise UserError(f"world model {name} must be positive, got {getattr(self, name)}")
        if self.latent_norm == "simnorm" and self.latent_size % self.simnorm_group:
            raise UserError(
                f"latent_size ({self.latent_size}) must be a multiple of simnorm_group ({self.simnorm_group});"
                f" use latent_size={max(1, round(self.latent_size / self.simnorm_group)) * self.simnorm_group}"
            )
        if self.latent_norm not in ("simnorm", "layernorm"):
            raise UserError(f"latent_norm must be 'simnorm' or 'layernorm', got {self.latent_norm!r}")
        if self.target_encoder not in ("stop_grad", "ema"):
            raise UserError(f"target_encoder must be 'stop_grad' or 'ema', got {self.target_encoder!r}")
        if self.num_bins < 2:
            raise UserError(f"num_bins must be at least 2 for a two-hot encoding, got {self.num_bins}")
        if not 0 < self.rho <= 1 or not 0 < self.discount <= 1 or not 0 < self.target_tau <= 1:
            raise UserError("rho, discount and target_tau must each be in (0, 1]")

    @property
    def compiler_options(self) -> dict | None:
        return {"xla_backend_optimization_level": 0} if self.fast_compile else None
