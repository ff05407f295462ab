"""The router: weights over the experts from the observation and the task text.

The executed action is Σ_i w_i · a_i (`mixture_action`). The router is trained
in the world model's imagination (or model-free on real rollouts), supervised
at first by a VLM prior whose weight decays.
"""

from metaworld_x.routing.checkpoint import expert_set_differences, load_router, save_router
from metaworld_x.routing.config import RouterConfig
from metaworld_x.routing.imagination import imagine, lambda_returns
from metaworld_x.routing.learner import RouterState, init_router_state, make_router_update, prepare_batch, train_router
from metaworld_x.routing.model_free import discounted_returns
from metaworld_x.routing.network import Router, RouterParams, hard_gumbel_softmax, kl_divergence, mixture_action
from metaworld_x.routing.planner import MppiConfig, imagined_return, plan_mppi, plan_weight_sequence
from metaworld_x.routing.prior import check_prior, prior_from_scores

__all__ = [
    "MppiConfig", "Router", "RouterConfig", "RouterParams", "RouterState", "check_prior",
    "discounted_returns", "expert_set_differences", "hard_gumbel_softmax", "imagine", "imagined_return", "init_router_state",
    "kl_divergence", "lambda_returns", "load_router", "make_router_update", "mixture_action", "plan_mppi",
    "plan_weight_sequence", "prepare_batch", "prior_from_scores", "save_router", "train_router",
]
