"""Router configuration: a frozen dataclass with the paper's settings and the ablation switches."""

from dataclasses import dataclass
from typing import Literal

from metaworld_x.errors import UserError


@dataclass(frozen=True)
class RouterConfig:
    """Everything that decides the router and its training."""

    hidden: tuple[int, ...] = (256, 256)
    """Router MLP hidden sizes (paper: observation + task → 256 → 256 → K)."""
    output: Literal["softmax", "gumbel"] = "softmax"
    """Soft weights, or hard one-hot Gumbel-softmax samples with straight-through gradients."""
    gumbel_temperature: float = 1.0
    """Temperature of the Gumbel-softmax relaxation whose gradient the hard sample passes on."""
    min_weight: float = 0.2
    """Soft weights below this are set to 0 and the rest renormalised (the largest is always kept): top-k gating
    by a threshold, so that experts the router all but rules out add nothing to the one it chose. A small share
    of a second gait is not harmless: the run router kept 0.08 on walk, which threw the sprint (0/10, 180 per
    1000 steps at 0.05); the same trained router scored 10/10 and 718 at 0.2, while reach (951) and door (787)
    kept their figures. The stand router at its prior (0.994 stand) scored 9/10 and 860 with no threshold at
    all. 0: plain softmax."""
    use_vlm: bool = True
    """Ablation: supervise the router with the VLM prior through the KL term."""
    vlm_weight: float = 1.0
    """Initial weight of KL(VLM prior ‖ router)."""
    vlm_decay: float = 0.99
    """vlm_weight is multiplied by this after every update (paper: 0.99)."""
    prior_temperature: float = 0.5
    """The prior is softmax(VLM scores / prior_temperature); scores run from 0 to 10. At 1.0 the text encoder put
    0.5 to 0.6 on the right expert of most sub-goals ("walk to": walk 0.57), and a router fitted to that blends experts
    that fall together; at 0.5 it puts 0.9 or more."""
    vlm: str | None = None
    """The prior's scorer: a transformers image-text-to-text model (a local folder, or a hub id already downloaded)
    that scores the experts on a render of the scene's start; None: the packaged text encoder, which reads the
    instruction only and sees no image."""
    vlm_trust_remote_code: bool = False
    """Let transformers run the code that `vlm`'s model ships with (only for a model you trust)."""
    entropy_coef: float = 0.1
    """Weight of the entropy bonus (the loss carries −entropy_coef · entropy)."""
    use_world_model: bool = True
    """Ablation: train in the world model's imagination; False trains model-free on real rollouts (REINFORCE with a baseline)."""
    fixed_expert: str | None = None
    """Ablation: no router; always run this expert."""
    imagination_horizon: int = 5
    """Steps of each imagined rollout."""
    discount: float = 0.99
    """Discount per control step."""
    td_lambda: float = 0.95
    """λ of the λ-returns."""
    learning_rate: float = 3e-4
    """Adam step size of the router."""
    critic_learning_rate: float = 3e-4
    """Adam step size of the router's critic (a Q ensemble started from the world model's)."""
    critic_tau: float = 0.01
    """EMA rate of the target critic."""
    value_pessimism: float = 1.0
    """κ of the bootstrap value mean − κ·std over the critic's heads (population std); with two heads, κ = 1 is their minimum (TD-MPC2)."""
    trust_region_coef: float = 1.0
    """Weight β of KL(anchor ‖ router) over imagined states, the anchor being the router that began the stage (the one that collected the latest real data): a soft trust region; 0: off."""
    return_scale_rate: float = 0.01
    """EMA rate of the return scale (5th–95th percentile range) that normalises the actor's objective."""
    max_grad_norm: float = 1.0
    """Global gradient-norm clip."""
    prior_init_scale: float = 0.01
    """With use_vlm and an initial prior: the output layer starts at bias log(prior), kernel scaled by this."""
    seed: int = 0
    """Random seed."""
    fast_compile: bool = False
    """Compile without XLA's LLVM optimisation: about 2.5x faster compiles on CPU, about 3x slower steps (tests, short runs)."""

    def __post_init__(self):
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))  # hashable, whatever it was given as
        if self.output not in ("softmax", "gumbel"):
            raise UserError(f"router output must be 'softmax' or 'gumbel', got {self.output!r}")
        if not self.hidden or min(self.hidden) <= 0:
            raise UserError(f"router hidden sizes must be positive, got {self.hidden}")
        if not 0 < self.vlm_decay <= 1:
            raise UserError(f"vlm_decay must be in (0, 1], got {self.vlm_decay}")
        if self.vlm_weight < 0 or self.entropy_coef < 0:
            raise UserError("vlm_weight and entropy_coef must be non-negative")
        if not 0 <= self.min_weight < 1:
            raise UserError(f"min_weight must be in [0, 1), got {self.min_weight}")
        if self.gumbel_temperature <= 0 or self.prior_temperature <= 0:
            raise UserError("gumbel_temperature and prior_temperature must be positive")
        if self.imagination_horizon < 1:
            raise UserError(f"imagination_horizon must be at least 1, got {self.imagination_horizon}")
        if self.value_pessimism < 0 or self.trust_region_coef < 0:
            raise UserError("value_pessimism and trust_region_coef must be non-negative")
        if not 0 < self.discount <= 1 or not 0 <= self.td_lambda <= 1:
            raise UserError("discount must be in (0, 1] and td_lambda in [0, 1]")
        if self.vlm is not None:
            object.__setattr__(self, "vlm", str(self.vlm))  # a Path is fine too; router.json records a string
        if self.vlm is not None and not self.vlm.strip():
            raise UserError("vlm must be a model folder or hub id; leave it unset for the packaged text encoder")
        if self.vlm_trust_remote_code and self.vlm is None:
            raise UserError("vlm_trust_remote_code applies to a vlm model; name one with vlm, or drop the flag")

    @property
    def compiler_options(self) -> dict | None:
        return {"xla_backend_optimization_level": 0} if self.fast_compile else None

    @property
    def initial_vlm_weight(self) -> float:
        """The KL weight at the first update: zero when the VLM is ablated."""
        return self.vlm_weight if self.use_vlm else 0.0
