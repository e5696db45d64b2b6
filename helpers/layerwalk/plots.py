"""Lesson 04 figures. Each takes data (plus an optional ``ax``) and returns the axes.

Per-layer statistics are drawn the same way everywhere: the median over the data tokens
with its interquartile band (or a mean with its bootstrap 95 % interval), and the learner's
own token as separate markers, so a reader sees at once whether that token is typical."""

from __future__ import annotations

import numpy as np

from helpers.common.stats import quartiles
from helpers.common.style import HIGHLIGHT, NORMAL, colorbar, layer_labels, new_axes, to_numpy


def transition_labels(n_transitions: int) -> list[str]:
    """``['emb→1', '1→2', ...]`` for ``L`` layer-to-layer transitions."""
    names = layer_labels(n_transitions + 1)
    return [f"{a}→{b}" for a, b in zip(names[:-1], names[1:])]


def plot_median_band(per_token, ax=None, x=None, label="data tokens: median", color=NORMAL, band_label=None,
                     hatch=None):
    """Median of ``per_token [N, layers]`` over the tokens with its interquartile band; returns the axes.
    With ``hatch`` (e.g. ``"//"``) the band is drawn as a hatched outline instead of a filled area,
    so it stays visible where it overlaps another band."""
    values = to_numpy(per_token)
    if values.ndim != 2 or values.shape[0] < 1:
        raise ValueError(f"per_token must be [n_tokens, layers], got shape {values.shape}.")
    ax = new_axes(ax, (6, 3))
    q25, med, q75 = quartiles(values)
    x = np.arange(values.shape[1]) if x is None else np.asarray(to_numpy(x))
    band_label = band_label or f"interquartile band ({values.shape[0]} tokens)"
    if hatch:
        ax.fill_between(x, q25, q75, facecolor="none", edgecolor=color, hatch=hatch, lw=1.0, label=band_label)
    else:
        ax.fill_between(x, q25, q75, color=color, alpha=0.2, lw=0, label=band_label)
    ax.plot(x, med, "o-", color=color, label=label)
    return ax


def plot_layer_norms(norms, ax=None, title="L2 norm per layer", per_token=None):
    """One value per hidden-state layer (``[L + 1]``) as bars; with ``per_token [N, L + 1]`` the
    data tokens' median and interquartile band are drawn over them."""
    norms = to_numpy(norms)
    ax = new_axes(ax, (6, 3))
    ax.bar(range(len(norms)), norms, color=HIGHLIGHT if per_token is not None else NORMAL, alpha=0.6,
           label="this token" if per_token is not None else None)
    if per_token is not None:
        plot_median_band(per_token, ax=ax)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the bars, never on them
    ax.set_xticks(range(len(norms)), layer_labels(len(norms)))
    ax.set_xlabel("layer")
    ax.set_ylabel("L2 norm ‖h‖")
    ax.set_title(title)
    return ax


def plot_consecutive(cosines, adjusted=None, ax=None, per_token=None, per_token_adjusted=None):
    """Cosine(layer l, layer l+1) for l = 0..L-1 of one token, optionally baseline-adjusted too;
    with ``per_token [N, L]`` (and ``per_token_adjusted``) the data tokens' median and band."""
    cosines = to_numpy(cosines)
    ax = new_axes(ax, (6.5, 3.2))
    x = np.arange(1, len(cosines) + 1)
    if per_token is not None:
        plot_median_band(per_token, ax=ax, x=x, label="data tokens, raw: median", color=NORMAL)
    if per_token_adjusted is not None:
        plot_median_band(per_token_adjusted, ax=ax, x=x, label="data tokens, adjusted: median",
                         color="tab:green", band_label="interquartile band (adjusted)")
    ax.plot(x, cosines, "D:" if per_token is not None else "o-", color=HIGHLIGHT if per_token is not None else NORMAL,
            label="this token, raw" if per_token is not None else "raw cosine")
    if adjusted is not None:
        ax.plot(x, to_numpy(adjusted), "s--", color="tab:red" if per_token is not None else HIGHLIGHT,
                label="this token, adjusted" if per_token is not None else "minus random-pair baseline")
    ax.set_xticks(x, transition_labels(len(x)))
    ax.set_xlabel("layer transition")
    ax.set_ylabel("cosine")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    return ax


def plot_similarity_heatmap(matrix, labels=None, ax=None, title="cosine between layers", vmin=None, vmax=None,
                            cbar_label="cosine", annotate=None, colorbar_on: bool = True, **kwargs):
    """Heatmap of a square layer-by-layer matrix, annotated at >= 8 pt when it is small enough
    (``colorbar_on=False``: the caller draws one colourbar for several panels)."""
    matrix = to_numpy(matrix)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix must be square, got shape {matrix.shape}.")
    labels = labels or layer_labels(matrix.shape[0])
    n = matrix.shape[0]
    ax = new_axes(ax, (max(4.5, 0.55 * n + 1.5), max(3.8, 0.5 * n + 1)))
    im = ax.imshow(matrix, cmap=kwargs.pop("cmap", "viridis"), vmin=vmin, vmax=vmax)
    ax.set_xticks(range(n), labels)
    ax.set_yticks(range(n), labels)
    if annotate if annotate is not None else n <= 9:
        for (i, j), v in np.ndenumerate(matrix):
            if not np.isfinite(v):
                continue  # a masked cell stays blank
            r, g, b, _ = im.cmap(im.norm(v))
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xlabel("layer")
    ax.set_ylabel("layer")
    ax.set_title(title)
    if colorbar_on:
        colorbar(im, ax, cbar_label)
    return ax


def plot_similarity_spread(token_matrix, per_token, token_name: str, axes=None):
    """Three panels: one token's layer-by-layer cosine matrix and the data tokens' median matrix,
    both on the full cosine scale [-1, 1] (one diverging colour map, one colourbar, so a
    truncated range cannot exaggerate differences), and the interquartile width of the data
    tokens (the spread) on its own scale."""
    import matplotlib.pyplot as plt

    token_matrix, per_token = to_numpy(token_matrix), to_numpy(per_token)
    q25, med, q75 = quartiles(per_token)
    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(8.8, 3.3), layout="constrained")
    scale = dict(vmin=-1, vmax=1, cmap="RdBu_r", colorbar_on=False)
    plot_similarity_heatmap(token_matrix, ax=axes[0], title=f"cosine, {token_name}", **scale)
    plot_similarity_heatmap(med, ax=axes[1], title=f"median, {per_token.shape[0]} data tokens", **scale)
    axes[1].set_ylabel("")
    axes[0].figure.colorbar(axes[0].images[0], ax=list(axes[:2]), label="cosine between layers", fraction=0.05,
                            pad=0.02)
    plot_similarity_heatmap(q75 - q25, ax=axes[2], title="spread: interquartile width", cmap="magma", vmin=0,
                            cbar_label="q75 − q25 of the cosine")
    axes[2].set_ylabel("")
    return axes


def plot_adjusted_matrix(control, adjusted, axes=None):
    """Two panels on one diverging scale [-1, 1]: the cross-layer control matrix (a random token
    at layer ``a`` vs a different one at layer ``b``) and the data median minus that control.
    The diagonal of the adjusted panel (a token against itself, minus the within-layer
    baseline) is masked: it is not a comparison between layers."""
    import matplotlib.pyplot as plt

    control, adjusted = to_numpy(control).astype(float), to_numpy(adjusted).astype(float).copy()
    np.fill_diagonal(adjusted, np.nan)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(7.6, 3.4), layout="constrained")
    scale = dict(vmin=-1, vmax=1, cmap="RdBu_r", colorbar_on=False)
    plot_similarity_heatmap(control, ax=axes[0], title="control: random-pair cosine", **scale)
    plot_similarity_heatmap(adjusted, ax=axes[1], title="data median cosine minus control", **scale)
    axes[1].set_ylabel("")
    axes[0].figure.colorbar(axes[0].images[0], ax=list(axes), label="cosine between layers", fraction=0.05, pad=0.02)
    return axes


def plot_baselines(within, cross, ax=None, mean_of_two=None):
    """The anisotropy controls with bootstrap 95 % intervals: ``within`` (list of
    :class:`~helpers.common.stats.Interval`, one per layer 0..L) is two random tokens at the
    same layer; ``cross`` (one per transition) is two random tokens one layer apart."""
    ax = new_axes(ax, (7, 3.2))
    n = len(within)
    x = np.arange(n)
    est = np.array([i.estimate for i in within])
    ax.errorbar(x, est, yerr=[est - [i.low for i in within], [i.high for i in within] - est], fmt="o-",
                color=NORMAL, capsize=3, label="same layer l (Ethayarajh's baseline)")
    xc = np.arange(len(cross)) + 0.5
    estc = np.array([i.estimate for i in cross])
    ax.errorbar(xc, estc, yerr=[estc - [i.low for i in cross], [i.high for i in cross] - estc], fmt="s-",
                color="tab:green", capsize=3, label="layer l vs l+1 (matching control)")
    if mean_of_two is not None:
        ax.plot(xc, to_numpy(mean_of_two), "x:", color="tab:grey", label="mean of two same-layer baselines")
    ax.set_xticks(x, layer_labels(n))
    ax.set_xlabel("layer (crosses between two layers: the transition)")
    ax.set_ylabel("cosine of random token pairs")
    ax.set_title("random-pair cosine (mean, bootstrap 95 % interval)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    return ax


def plot_norm_parts(parts: dict, ax=None, token_norms=None, token_name: str = "this token"):
    """What each LayerNorm contributes to the length: median ‖h‖ and ‖γ⊙ẑ‖ over the data tokens
    (interquartile bands), ‖γ‖ (the length if ẑ spread evenly), ‖β‖, and one token's ‖h‖."""
    norm, scaled = to_numpy(parts["norm"]), to_numpy(parts["scaled"])
    ax = new_axes(ax, (7, 3.4))
    x = np.arange(norm.shape[1])
    plot_median_band(norm, ax=ax, x=x, label="‖h‖, data tokens: median", color=NORMAL)
    plot_median_band(scaled, ax=ax, x=x, label="‖γ⊙ẑ‖ = ‖h − β‖: median", color="tab:purple",
                     band_label="interquartile band of ‖γ⊙ẑ‖ (hatched)", hatch="////")
    ax.plot(x, to_numpy(parts["gamma"]), "^--", color="tab:green", label="‖γ‖ (ẑ spread evenly)")
    ax.plot(x, to_numpy(parts["beta"]), "v--", color="tab:brown", label="‖β‖")
    if token_norms is not None:
        ax.plot(x, to_numpy(token_norms), "D:", color=HIGHLIGHT, label=f"‖h‖ of {token_name}")
    ax.set_xticks(x, layer_labels(len(x)))
    ax.set_xlabel("layer (each ends in LayerNorm: h = γ⊙ẑ + β)")
    ax.set_ylabel("L2 norm")
    ax.set_ylim(bottom=0)
    ax.set_title("L2 norm per layer and its LayerNorm parts")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    return ax


def plot_top_dimension_share(share, dims, hidden_size: int, ax=None, ylabel: str = "share of ‖h‖²",
                             title: str | None = None):
    """Share of a per-dimension total (by default ‖h‖²; e.g. the random-pair cosine) carried by the
    ``k`` largest dimensions per layer (bars, ids on top) against the ``k / H`` an even spread would
    give."""
    share, dims = to_numpy(share), to_numpy(dims)
    k = dims.shape[1]
    ax = new_axes(ax, (7, 3.2))
    x = np.arange(len(share))
    bars = ax.bar(x, share, color=NORMAL, label=f"top {k} dimensions")
    ax.axhline(k / hidden_size, color="tab:grey", ls=":", label=f"even spread: {k}/{hidden_size}")
    for bar, ids in zip(bars, dims):
        ax.annotate(",".join(str(int(i)) for i in ids), (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, layer_labels(len(x)))
    ax.set_ylim(0, max(float(share.max()) * 1.25, 2 * k / hidden_size))
    ax.set_xlabel("layer (numbers: the dimensions' ids)")
    ax.set_ylabel(ylabel)
    ax.set_title(title or f"share of the squared length in the {k} largest dimensions")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    return ax


def _place_labels(ax, points, labels, color, obstacles=()):
    """Annotate ``points`` with ``labels`` at 8 pt: for each, try 8 directions at growing
    distances and keep the first spot whose box overlaps no label placed so far and none of the
    ``obstacles`` (display-space boxes of markers and arrows)."""
    renderer = ax.figure.canvas.get_renderer()
    placed = list(obstacles)
    directions = [(1, 1), (-1, 1), (1, -1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1)]
    texts = []
    for (x, y), lab in zip(points, labels):
        best = None
        for dist in (8, 13, 19, 26):
            for dx, dy in directions:
                text = ax.annotate(lab, (x, y), xytext=(dx * dist, dy * dist), textcoords="offset points",
                                   fontsize=8, color=color, ha="center", va="center")
                box = text.get_window_extent(renderer).expanded(1.1, 1.1)
                if not any(box.overlaps(other) for other in placed):
                    best = text
                    break
                text.remove()
            if best is not None:
                break
        if best is None:  # nowhere free: the first spot
            best = ax.annotate(lab, (x, y), xytext=(8, 8), textcoords="offset points", fontsize=8, color=color,
                               ha="center", va="center")
        best.set_in_layout(False)  # placed in screen space: must not move the axes afterwards
        placed.append(best.get_window_extent(renderer))
        texts.append(best)
    return texts


def _path_obstacles(ax, path, size: float = 10.0) -> list:
    """Display-space boxes around a path's markers and along its segments (labels avoid them)."""
    from matplotlib.transforms import Bbox

    pts = ax.transData.transform(path)
    boxes = []
    for a, b in zip(pts[:-1], pts[1:]):
        for t in np.linspace(0, 1, 12):
            x, y = a + t * (b - a)
            boxes.append(Bbox.from_extents(x - size / 2, y - size / 2, x + size / 2, y + size / 2))
    x, y = pts[-1]
    boxes.append(Bbox.from_extents(x - size, y - size, x + size, y + size))
    return boxes


def _draw_path(ax, path, name, color):
    ax.plot(path[:, 0], path[:, 1], "o", color=color, label=name, ms=5)
    for a, b in zip(path[:-1, :2], path[1:, :2]):
        arrow = ax.annotate("", xy=b, xytext=a, arrowprops=dict(arrowstyle="-|>", color=color, lw=1.3,
                                                                shrinkA=3, shrinkB=3, mutation_scale=12))
        arrow.set_in_layout(False)


def plot_trajectory(coords, names, ax=None, explained=None):
    """PCA paths ``[k, L + 1, 2]`` with one arrow per layer step (the direction of travel), a
    marker and a non-overlapping 8 pt label per layer, equal scales on both axes and the %
    variance of each component. Without ``ax``: one panel per token, each centred on its path
    and all on **one** scale (the same span in data units on both axes of every panel), so path
    lengths compare by eye; returns the axes."""
    import matplotlib.pyplot as plt

    coords = to_numpy(coords)
    if coords.ndim != 3 or coords.shape[0] != len(names) or coords.shape[2] < 2:
        raise ValueError(f"coords must be [len(names), layers, >=2], got {coords.shape} for {len(names)} names.")
    labels = layer_labels(coords.shape[1])
    colors = [NORMAL, HIGHLIGHT, "tab:green", "tab:red", "tab:purple"]
    if ax is None:
        k = len(names)
        fig, axes = plt.subplots(1, k, figsize=(min(8.8, 4.4 * k), 4.4), squeeze=False, layout="constrained")
        axes = list(axes[0])
        groups = [[i] for i in range(k)]
        fig.suptitle("trajectory through the layers: PCA of all tokens at all layers (arrows: emb → last)")
    else:
        axes, groups = [ax], [list(range(len(names)))]
        ax.set_title("trajectory through the layers (PCA of all tokens, all layers)")
    # One span for every panel: the largest extent of any path (x or y), plus a margin.
    span = max(float(np.ptp(coords[members][:, :, d])) for members in groups for d in (0, 1))
    span = 1.3 * span if span > 0 else 1.0
    for panel, members in zip(axes, groups):
        for i in members:
            _draw_path(panel, coords[i, :, :2], names[i], colors[i % len(colors)])
        centre = [(coords[members][:, :, d].min() + coords[members][:, :, d].max()) / 2 for d in (0, 1)]
        panel.set_xlim(centre[0] - span / 2, centre[0] + span / 2)
        panel.set_ylim(centre[1] - span / 2, centre[1] + span / 2)
        panel.set_aspect("equal", adjustable="box")
        if len(members) == 1:
            panel.set_title(f"token {names[members[0]]!r}")
        if explained is not None:
            ex = to_numpy(explained)
            panel.set_xlabel(f"PC 1 ({ex[0]:.0%} of the variance)")
            panel.set_ylabel(f"PC 2 ({ex[1]:.0%} of the variance)")
        else:
            panel.set_xlabel("PC 1")
            panel.set_ylabel("PC 2")
    axes[0].figure.canvas.draw()  # final limits before labels are placed in screen space
    for panel, members in zip(axes, groups):
        obstacles = [box for i in members for box in _path_obstacles(panel, coords[i, :, :2])]
        for i in members:
            _place_labels(panel, coords[i, :, :2], labels, colors[i % len(colors)], obstacles)
        if len(members) > 1:
            panel.legend(loc="best")
    return axes if ax is None else ax
