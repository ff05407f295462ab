"""PNG plots of a router run: training curves, and expert weights over an episode."""

import warnings
from pathlib import Path

import numpy as np

from metaworld_x.atomic import save_figure


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # headless
    import matplotlib.pyplot as plt

    return plt


def plot_training(path: Path, wm_history: dict, full: dict, ablations: dict, expert_names) -> None:
    """World-model loss; imagined return and KL weight; evaluation return vs environment steps per variant."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    ax = axes[0]
    ax.plot(wm_history.get("step", []), wm_history.get("world_model/total", []), label="total")
    ax.plot(wm_history.get("step", []), wm_history.get("world_model/consistency", []), label="consistency")
    ax.set(title="world model (expert data)", xlabel="gradient step", ylabel="loss", yscale="log")
    ax.legend()
    ax = axes[1]
    offset = 0
    returns, weights = [], []
    for stage in full["imagination"]:
        values = stage.get("imagination/return", [])
        returns += values
        weights += stage.get("router/vlm_weight", [])
        offset += len(values)
    ax.plot(np.arange(len(returns)) * 10, returns, label="imagined return")
    ax.set(title="imagination", xlabel="router update", ylabel="λ-return")
    twin = ax.twinx()
    twin.plot(np.arange(len(weights)) * 10, weights, color="tab:red", label="vlm_weight")
    twin.set_ylabel("vlm_weight (KL to the prior)")
    ax = axes[2]
    for name, run in {"full": full, **ablations}.items():
        evals = run.get("evals", [])
        ax.plot([e["env_steps"] for e in evals], [e["return_mean"] for e in evals], marker="o", label=name)
    ax.set(title="real episodes (10 seeds)", xlabel="environment steps", ylabel="mean return")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=90)


def expert_colours(count: int) -> list:
    """A distinct colour per expert: matplotlib's ten-colour cycle repeats past ten (carry and walk came out alike)."""
    plt = _pyplot()
    if count <= 10:
        return plt.rcParams["axes.prop_cycle"].by_key()["color"][:count]
    return [plt.get_cmap("tab20")(k % 20) for k in range(count)]


def plot_weights(path: Path, weights: np.ndarray, expert_names, dt: float, title: str,
                 switches: list[tuple[int, float]] = (), subgoals: list[tuple[str, float | None]] = ()) -> Path:
    """weights [T, B, K] (nan after an episode ended): mean and range over episodes, per expert, over time.

    `switches` [(expert index, time s)] and `subgoals` [(label, time s or None)] of one episode (the first) are
    marked: a dashed line where the dominant expert changed, named after the one that took over, and a dotted one
    where each sub-goal was reached."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.5))
    t = np.arange(weights.shape[0]) * dt
    colours = expert_colours(len(expert_names))
    warnings.simplefilter("ignore", RuntimeWarning)  # columns of episodes that already ended are all nan
    for k, name in enumerate(expert_names):
        mean = np.nanmean(weights[:, :, k], axis=1)
        low, high = np.nanmin(weights[:, :, k], axis=1), np.nanmax(weights[:, :, k], axis=1)
        ax.plot(t, mean, label=name, color=colours[k])
        ax.fill_between(t, low, high, alpha=0.2, color=colours[k])
    for k, at in list(switches)[1:]:  # the first entry is the expert that starts
        ax.axvline(at, color=colours[k], linestyle="--", linewidth=1)
        ax.annotate(f"-> {expert_names[k]}", (at, 1.0), xytext=(2, -10), textcoords="offset points", fontsize=7)
    for label, at in subgoals:
        if at is not None:
            ax.axvline(at, color="k", linestyle=":", linewidth=1)
            ax.annotate(f"✓ {label}", (at, 0.0), xytext=(2, 4), textcoords="offset points", fontsize=7, rotation=90)
    ax.set(title=title, xlabel="time (s)", ylabel="router weight", ylim=(-0.02, 1.02))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=90)
    return path
