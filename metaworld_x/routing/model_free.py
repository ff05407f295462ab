"""The model-free ablation: the router trained on real rollouts with REINFORCE and a baseline.

The router is a categorical policy over experts. A batch holds the states the
router acted in (obs [N, obs], text [N, text], prior [N, K]), the expert it
sampled (choice [N]) and the discounted return that followed (return [N]).
The baseline is the batch's mean return; advantages are scaled by its
standard deviation. The same KL and entropy terms as in imagination apply.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from metaworld_x.routing.network import Router, entropy, kl_divergence


def discounted_returns(reward, done, discount: float) -> np.ndarray:
    """Reward-to-go [T, B] from rewards and done flags [T, B]; a done step does not bootstrap past itself."""
    reward, done = np.asarray(reward, np.float32), np.asarray(done, np.float32)
    out = np.zeros_like(reward)
    running = np.zeros(reward.shape[1], np.float32)
    for t in range(reward.shape[0] - 1, -1, -1):
        running = reward[t] + discount * (1 - done[t]) * running
        out[t] = running
    return out


def make_model_free_update(router: Router):
    """update(state, batch) -> (state, metrics); pure, jit it."""
    config = router.config
    optimizer = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate))

    def loss_fn(params, state, batch):
        logits = router.logits(params, batch["obs"], batch["text"])
        log_probs = jax.nn.log_softmax(logits, axis=-1)
        chosen = jnp.take_along_axis(log_probs, batch["choice"][:, None].astype(jnp.int32), axis=-1)[:, 0]
        returns = batch["return"]
        advantage = (returns - jnp.mean(returns)) / (jnp.std(returns) + 1e-6)
        pg = -jnp.mean(advantage * chosen)
        kl = jnp.mean(kl_divergence(batch["prior"], logits))
        ent = jnp.mean(entropy(logits))
        loss = pg + state.vlm_weight * kl - config.entropy_coef * ent
        return loss, {"losses/policy_gradient": pg, "losses/kl": kl, "losses/entropy": ent,
                      "losses/kl_weighted": state.vlm_weight * kl}

    def update(state, batch: dict):
        (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, state, batch)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        metrics.update({"losses/actor": loss, "router/vlm_weight": state.vlm_weight, "losses/grad_norm": optax.tree.norm(grads)})
        new_state = state.replace(
            params=optax.apply_updates(state.params, updates), opt_state=opt_state,
            vlm_weight=state.vlm_weight * config.vlm_decay, step=state.step + 1,
        )
        return new_state, metrics

    return update
