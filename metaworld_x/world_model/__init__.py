"""A TD-MPC2-style latent world model: encode, next, reward, Q, terminated (and decode).

Trained on windows of real transitions from `ReplayBuffer`; the router is
trained inside it (`metaworld_x.routing`).
"""

from metaworld_x.world_model.buffer import ReplayBuffer
from metaworld_x.world_model.checkpoint import load_world_model, save_world_model
from metaworld_x.world_model.config import WorldModelConfig
from metaworld_x.world_model.evaluate import k_step_error
from metaworld_x.world_model.model import WorldModel, WorldModelNets, WorldModelParams
from metaworld_x.world_model.train import train_world_model, world_model_loss

__all__ = [
    "ReplayBuffer", "WorldModel", "WorldModelConfig", "WorldModelNets", "WorldModelParams",
    "k_step_error", "load_world_model", "save_world_model", "train_world_model", "world_model_loss",
]
