"""Training the router inside the world model: actor–critic on imagined latent rollouts.

From real start observations the latent is rolled out for H steps. The
router reads the real observation at the first step and the decoded latent
(world model's `decode`) after that, with the task embedding; its
weights over the experts are the dynamics' conditioning input: the world model
is trained on (state, expert weights) data, because running the experts
themselves inside imagination would need raw observations that a latent
rollout does not have.

    r_t = reward(z_t, w_t),  z_{t+1} = next(z_t, w_t),  c_t = 1 − terminated(z_{t+1})
    G_t = r_t + γ c_t ((1 − λ) V_{t+1} + λ G_{t+1}),  G_{H−1} = r + γ c V_H
    V_t = mean − κ·std over the heads of the target critic Q(z_t, w_t)  (a lower confidence bound:
          the actor maximises over w, so weights the heads disagree on are discounted)

The actor maximises Σ_t (Π_{j<t} c_j) G_t / max(1, S), with gradients through
the dynamics, where S is a running 5th–95th percentile range of returns; plus
vlm_weight·KL(prior ‖ router) − entropy_coef·entropy + β·KL(anchor ‖ router).
The critic (a Q ensemble started from the world model's) regresses G_t with
two-hot cross-entropy.

The last term is a trust region around the anchor, the router the stage began
from (the one that collected the latest real data and was last evaluated on
the real robot). One imagined step of a mixture of experts looks almost like
one step of either expert, so the world model's reward, termination and value
heads barely depend on the weights, while in reality a held mixture can make
the robot fall hundreds of steps later. Imagined returns therefore cannot
vouch for a large change of the weights; the bound on model-based returns
grows with the policy's divergence from the data-collecting one (MBPO), so
each stage is a KL-regularised improvement step around its anchor (as in
MPO or mirror-descent policy optimisation): the router moves only as far as
β lets the imagined advantage pull it, and the next fine-tune round's real
rollouts, collected by the moved router, ground the model there before it
moves again. Unlike vlm_weight, β does not decay: it anchors to the router's
own last real data, not to the VLM. A flat imagined objective leaves the
entropy bonus in charge, and β ≫ entropy_coef keeps that from walking the
router away.
"""

import jax
import jax.numpy as jnp
import optax

from metaworld_x.routing.network import Router, entropy, kl_divergence
from metaworld_x.world_model.model import WorldModel, WorldModelParams
from metaworld_x.world_model.networks import two_hot_cross_entropy


def imagine(router: Router, model: WorldModel, router_params, wm_params: WorldModelParams, batch: dict, key: jax.Array):
    """Imagined rollout from batch['obs'] [B, obs] with batch['text'] [B, text]: time-major arrays [H, B, ...]."""
    config = router.config
    horizon = config.imagination_horizon
    text = batch["text"]
    z0 = jax.lax.stop_gradient(model.encode(wm_params, batch["obs"]))
    gumbel = config.output == "gumbel"
    keys = jax.random.split(key, horizon + 1)

    real = model.normalise(wm_params, batch["obs"])

    def policy(z, step_key, first):
        # The first step reads the real observation, as the deployed router will; later ones the decoded latent.
        obs_norm = jnp.where(first, real, model.decode(wm_params, z))
        logits = router.logits_normalised(router_params, obs_norm, text)
        return obs_norm, logits, router.weights_from_logits(logits, step_key if gumbel else None)

    def step(z, inputs):
        step_key, first = inputs
        obs_norm, logits, w = policy(z, step_key, first)
        z_next = model.next(wm_params, z, w)
        cont = 1 - model.terminated(wm_params, z_next)
        return z_next, {"z": z, "w": w, "logits": logits, "obs_norm": obs_norm, "reward": model.reward(wm_params, z, w), "cont": cont}

    z_last, traj = jax.lax.scan(step, z0, (keys[:horizon], jnp.arange(horizon) == 0))
    _, _, w_last = policy(z_last, keys[horizon], False)
    later_z = jnp.concatenate([traj["z"][1:], z_last[None]])
    later_w = jnp.concatenate([traj["w"][1:], w_last[None]])
    # The actor maximises over weights, so a head that overrates weights the data never tried would be exploited.
    q_next = model.Q(wm_params, later_z, later_w, target=True)  # [E, H, B]
    traj["value_next"] = pessimistic_value(q_next, config.value_pessimism)
    traj["value_spread"] = ensemble_std(q_next)
    return traj


def pessimistic_value(q: jax.Array, kappa: float) -> jax.Array:
    """Lower confidence bound over an ensemble: Q [E, ...] -> mean − κ·std over E [...] (E = 2, κ = 1: the minimum)."""
    return jnp.mean(q, axis=0) - kappa * ensemble_std(q)


def ensemble_std(q: jax.Array) -> jax.Array:
    """Population std over the leading axis, with a finite gradient where the heads agree exactly."""
    return jnp.sqrt(jnp.var(q, axis=0) + 1e-6)


def lambda_returns(reward, cont, value_next, discount: float, lam: float) -> jax.Array:
    """λ-returns [H, B] from rewards, continuation probabilities and V_{t+1}, all [H, B]."""

    def back(next_return, inputs):
        r, c, v = inputs
        g = r + discount * c * ((1 - lam) * v + lam * next_return)
        return g, g

    _, returns = jax.lax.scan(back, value_next[-1], (reward, cont, value_next), reverse=True)
    return returns


def make_imagination_update(router: Router, model: WorldModel):
    """update(state, wm_params, batch) -> (state, metrics); batch: obs [B, obs], text [B, text], prior [B, K]. Pure; jit it."""
    config = router.config
    actor_opt = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate))
    critic_opt = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.critic_learning_rate))

    def with_critic(wm_params, critic, target_critic):
        return wm_params.replace(nets=wm_params.nets.replace(q=critic), target_q=target_critic)

    def actor_loss(router_params, state, wm_params, batch, key):
        traj = imagine(router, model, router_params, wm_params, batch, key)
        returns = lambda_returns(traj["reward"], traj["cont"], traj["value_next"], config.discount, config.td_lambda)
        alive = jax.lax.stop_gradient(jnp.cumprod(jnp.concatenate([jnp.ones_like(traj["cont"][:1]), traj["cont"][:-1]]), axis=0))
        objective = jnp.mean(alive * returns) / jnp.maximum(1.0, state.return_scale)
        kl = jnp.mean(kl_divergence(batch["prior"][None], traj["logits"]))
        ent = jnp.mean(entropy(traj["logits"]))
        # The anchor judged on the same (real, then decoded) observations as the router.
        text = jnp.broadcast_to(batch["text"], traj["obs_norm"].shape[:-1] + batch["text"].shape[-1:])
        anchor = jax.nn.softmax(router.logits_normalised(state.anchor, traj["obs_norm"], text), axis=-1)
        trust_kl = jnp.mean(kl_divergence(jax.lax.stop_gradient(anchor), traj["logits"]))
        loss = -objective + state.vlm_weight * kl - config.entropy_coef * ent + config.trust_region_coef * trust_kl
        aux = {"traj": jax.lax.stop_gradient(traj), "returns": jax.lax.stop_gradient(returns), "alive": alive,
               "objective": objective, "kl": kl, "entropy": ent, "trust_kl": trust_kl}
        return loss, aux

    def critic_loss(critic, wm_params, traj, returns, alive):
        logits = model.Q_logits(wm_params.replace(nets=wm_params.nets.replace(q=critic)), traj["z"], traj["w"])
        ce = two_hot_cross_entropy(logits, returns[None], model.config.value_range)  # [E, H, B]
        return jnp.mean(jnp.mean(ce, axis=0) * alive)

    def update(state, wm_params: WorldModelParams, batch: dict):
        key, step_key = jax.random.split(state.key)
        wm = with_critic(wm_params, state.critic, state.target_critic)
        (loss, aux), grads = jax.value_and_grad(actor_loss, has_aux=True)(state.params, state, wm, batch, step_key)
        updates, opt_state = actor_opt.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)

        c_loss, c_grads = jax.value_and_grad(critic_loss)(state.critic, wm, aux["traj"], aux["returns"], aux["alive"])
        c_updates, critic_opt_state = critic_opt.update(c_grads, state.critic_opt_state, state.critic)
        critic = optax.apply_updates(state.critic, c_updates)

        returns = aux["returns"]
        spread = jnp.percentile(returns, 95) - jnp.percentile(returns, 5)
        scale = (1 - config.return_scale_rate) * state.return_scale + config.return_scale_rate * spread
        metrics = {
            "losses/actor": loss,
            "losses/trust_kl": aux["trust_kl"],
            "losses/critic": c_loss,
            "imagination/value_spread": jnp.mean(aux["traj"]["value_spread"]),
            "losses/objective": aux["objective"],
            "losses/kl": aux["kl"],
            "losses/kl_weighted": state.vlm_weight * aux["kl"],
            "losses/entropy": aux["entropy"],
            "imagination/return": jnp.mean(returns[0]),
            "imagination/reward": jnp.mean(aux["traj"]["reward"]),
            "router/vlm_weight": state.vlm_weight,
            "router/mean_weights": jnp.mean(aux["traj"]["w"], axis=(0, 1)),
            "losses/grad_norm": optax.tree.norm(grads),
        }
        new_state = state.replace(
            params=params, opt_state=opt_state, critic=critic, critic_opt_state=critic_opt_state,
            target_critic=jax.tree_util.tree_map(lambda t, o: (1 - config.critic_tau) * t + config.critic_tau * o, state.target_critic, critic),
            vlm_weight=state.vlm_weight * config.vlm_decay, return_scale=scale, step=state.step + 1, key=key,
        )
        return new_state, metrics

    return update
