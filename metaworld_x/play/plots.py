"""PNG plots of a played episode: tracking error per body part (the expert weights are `routing.curves`')."""

from pathlib import Path

import numpy as np

from metaworld_x.atomic import save_figure


def _figure():
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    return plt


def plot_tracking_error(names: tuple[str, ...], errors: np.ndarray, dt: float, path: Path, title: str = "") -> Path:
    """Mean and 95th-percentile error of each keypoint (left) and each over time (right).

    Args:
      names: [K] keypoint (body or site) names.
      errors: [T, K] distance (m) of each keypoint from its reference, both relative to their roots.
      dt: seconds per row of `errors`.
    """
    plt = _figure()
    errors_cm = np.asarray(errors, np.float64) * 100
    # the root (and bodies fixed on its axis) are zero by construction: relative to the root
    moving = errors_cm.max(axis=0) > 1e-4
    names, errors_cm = tuple(n for n, m in zip(names, moving) if m), errors_cm[:, moving]
    order = np.argsort(errors_cm.mean(axis=0))
    fig, (bars, lines) = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [1, 1.4]})
    y = np.arange(len(names))
    bars.barh(y, errors_cm.mean(axis=0)[order], color="tab:blue", label="mean")
    bars.plot(np.percentile(errors_cm, 95, axis=0)[order], y, "k|", markersize=10, label="95th percentile")
    bars.set_yticks(y, [names[i] for i in order])
    bars.set_xlabel("tracking error (cm)")
    bars.legend(loc="lower right")
    time = np.arange(errors_cm.shape[0]) * dt
    worst = order[::-1][:5]
    for i in worst:
        lines.plot(time, errors_cm[:, i], label=names[i], linewidth=1)
    lines.plot(time, errors_cm.mean(axis=1), "k", linewidth=2, label="mean of all")
    lines.set_xlabel("time (s)")
    lines.set_ylabel("tracking error (cm)")
    lines.set_title("the five worst keypoints over time")
    lines.legend(fontsize=8)
    fig.suptitle(title or "tracking error per body part (relative to the root)")
    fig.tight_layout()
    return save_figure(fig, path, dpi=100)
