"""Lesson 07 figures. Each takes data (plus an optional ``ax``) and returns the axes.

Per-layer statistics are drawn the same way everywhere: the median over the data tokens
with its interquartile band (or a mean with its bootstrap 95 % interval), and the learner's
own token as separate markers, so a reader sees at once whether that token is typical."""

from __future__ import annotations

import numpy as np

from helpers.common.stats import quartiles
from helpers.common.style import (
    DIVERGING, FIG_WIDTH_IN, HIGHLIGHT, NORMAL, SEQUENTIAL, cell_text, colorbar, end_labels, layer_labels,
    legend_below, new_axes, to_numpy,
)


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
    ax.set_xticks(range(len(norms)), layer_labels(len(norms)))
    ax.set_xlabel("layer")
    ax.set_ylabel("L2 norm ‖h‖")
    ax.set_title(title)
    if per_token is not None:
        legend_below(ax, ncol=3)  # under the axes, never on the bars
    return ax


def plot_consecutive(cosines, adjusted=None, ax=None, per_token=None, per_token_adjusted=None,
                     measure: str = "raw", ylabel: str = "cosine"):
    """Cosine(layer l, layer l+1) for l = 0..L-1 of one token, optionally baseline-adjusted too;
    with ``per_token [N, L]`` (and ``per_token_adjusted``) the data tokens' median and band.
    ``measure`` names what ``cosines`` and ``per_token`` are (e.g. ``"minus control"`` to draw
    only the adjusted values, without repeating the raw figure)."""
    cosines = to_numpy(cosines)
    ax = new_axes(ax, (FIG_WIDTH_IN, 3.2))
    x = np.arange(1, len(cosines) + 1)
    if per_token is not None:
        plot_median_band(per_token, ax=ax, x=x, label=f"data tokens, {measure}: median", color=NORMAL)
    if per_token_adjusted is not None:
        plot_median_band(per_token_adjusted, ax=ax, x=x, label="data tokens, adjusted: median",
                         color="tab:green", band_label="interquartile band (adjusted)")
    ax.plot(x, cosines, "D:" if per_token is not None else "o-", color=HIGHLIGHT if per_token is not None else NORMAL,
            label=f"this token, {measure}" if per_token is not None else f"{measure} cosine")
    if adjusted is not None:
        ax.plot(x, to_numpy(adjusted), "s--", color="tab:red" if per_token is not None else HIGHLIGHT,
                label="this token, adjusted" if per_token is not None else "minus random-pair baseline")
    ax.set_xticks(x, transition_labels(len(x)))
    ax.set_xlabel("layer transition")
    ax.set_ylabel(ylabel)
    legend_below(ax)
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
    im = ax.imshow(matrix, cmap=kwargs.pop("cmap", SEQUENTIAL), vmin=vmin, vmax=vmax)
    ax.set_xticks(range(n), labels)
    ax.set_yticks(range(n), labels)
    if annotate if annotate is not None else n <= 9:
        for (i, j), v in np.ndenumerate(matrix):
            if not np.isfinite(v):
                continue  # a masked cell stays blank
            r, g, b, _ = im.cmap(im.norm(v))
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
            ax.text(j, i, cell_text(v), ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xlabel("layer")
    ax.set_ylabel("layer")
    ax.set_title(title)
    if colorbar_on:
        colorbar(im, ax, cbar_label)
    return ax


def _cosine_scale(*matrices) -> dict:
    """A colour scale for cosines: sequential from 0 to 1 when every value is >= 0 (a diverging map
    would leave one-signed data pale), else diverging over the full range [-1, 1]."""
    values = np.concatenate([np.asarray(m, dtype=float).ravel() for m in matrices])
    values = values[np.isfinite(values)]
    if values.size and values.min() >= 0:
        return dict(vmin=0, vmax=1, cmap=SEQUENTIAL, colorbar_on=False)
    return dict(vmin=-1, vmax=1, cmap=DIVERGING, colorbar_on=False)


def plot_similarity_spread(token_matrix, per_token, token_name: str, axes=None):
    """Three matrices of the cosine between layers: one token's and the data tokens' median on
    **one** cosine scale (sequential 0-1 when all cosines are positive, diverging -1..1 otherwise;
    never a truncated range), and their spread (the interquartile width) on its own sequential
    scale from 0, with its own colourbar: it is a width, not a cosine. Cells read ".87" (two
    decimals, no leading zero). Returns the three axes."""
    import matplotlib.pyplot as plt

    token_matrix, per_token = to_numpy(token_matrix), to_numpy(per_token)
    q25, med, q75 = quartiles(per_token)
    if axes is None:
        _, grid = plt.subplots(2, 2, figsize=(FIG_WIDTH_IN, 5.6), layout="constrained")
        grid[1, 1].set_visible(False)  # three panels, cells wide enough for ".87" at 8 pt
        axes = [grid[0, 0], grid[0, 1], grid[1, 0]]
    scale = _cosine_scale(token_matrix, med)
    plot_similarity_heatmap(token_matrix, ax=axes[0], title=f"token {token_name}", **scale)
    plot_similarity_heatmap(med, ax=axes[1], title=f"median, {per_token.shape[0]} tokens", **scale)
    spread = q75 - q25
    plot_similarity_heatmap(spread, ax=axes[2], title="spread over the tokens: q75 − q25", vmin=0,
                            vmax=max(float(np.nanmax(spread)), 1e-6), cmap=SEQUENTIAL, colorbar_on=False)
    axes[1].set_ylabel("")
    colorbar(axes[0].images[0], [axes[0], axes[1]], "cosine between layers", fraction=0.04, pad=0.02, shrink=0.8)
    colorbar(axes[2].images[0], [axes[2]], "spread (cosine units)", fraction=0.05, pad=0.02)
    return axes


def plot_adjusted_matrix(control, adjusted, axes=None):
    """Two panels, two measures, two scales: the cross-layer control matrix (a random token at layer
    ``a`` vs a different one at layer ``b``: a cosine, sequential 0-1 when positive) and the data
    median minus that control (a signed difference: diverging, symmetric around 0 at its own
    largest size). The diagonal of the adjusted panel (a token against itself, minus the
    within-layer baseline) is masked: it is not a comparison between layers."""
    import matplotlib.pyplot as plt

    control, adjusted = to_numpy(control).astype(float), to_numpy(adjusted).astype(float).copy()
    np.fill_diagonal(adjusted, np.nan)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(FIG_WIDTH_IN, 3.3), layout="constrained")
    plot_similarity_heatmap(control, ax=axes[0], title="control: random-pair cosine", **_cosine_scale(control))
    limit = max(float(np.nanmax(np.abs(adjusted))), 1e-6)
    plot_similarity_heatmap(adjusted, ax=axes[1], title="data median minus control", vmin=-limit, vmax=limit,
                            cmap=DIVERGING, colorbar_on=False)
    axes[1].set_ylabel("")
    colorbar(axes[0].images[0], [axes[0]], "cosine", fraction=0.06, pad=0.02)
    colorbar(axes[1].images[0], [axes[1]], "median minus control", fraction=0.06, pad=0.02)
    return axes


def plot_baselines(within, cross, ax=None, mean_of_two=None):
    """The anisotropy controls with bootstrap 95 % intervals, in two panels on one scale so
    layers and transitions never share an axis: ``within`` (list of
    :class:`~helpers.common.stats.Interval`, one per layer 0..L) is two random tokens at the
    same layer (top, x = layers); ``cross`` (one per transition) is two random tokens one layer
    apart (bottom, x = transitions "emb→1" ...), with ``mean_of_two`` (the mean of the two
    same-layer baselines, not the same thing) beside it. Returns the two axes (the top one
    first); with ``ax`` (a pair of axes) draws into them."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(2, 1, figsize=(FIG_WIDTH_IN, 4.9), sharey=True, layout="constrained")
    top, bottom = ax
    n = len(within)
    x = np.arange(n)
    est = np.array([i.estimate for i in within])
    top.errorbar(x, est, yerr=[est - [i.low for i in within], [i.high for i in within] - est], fmt="o-",
                 color=NORMAL, capsize=3, label="same layer l (Ethayarajh's baseline)")
    top.set_xticks(x, layer_labels(n))
    top.set_xlabel("layer")
    top.set_title("two random tokens at the same layer", loc="left")
    xc = np.arange(len(cross))
    estc = np.array([i.estimate for i in cross])
    bottom.errorbar(xc, estc, yerr=[estc - [i.low for i in cross], [i.high for i in cross] - estc], fmt="s-",
                    color="tab:green", capsize=3, label="layer l vs l+1 (the matching control)")
    if mean_of_two is not None:
        bottom.plot(xc, to_numpy(mean_of_two), "x:", color="tab:grey", label="mean of the two same-layer baselines")
        bottom.legend(loc="best", frameon=False)
    bottom.set_xticks(xc, transition_labels(len(cross)))
    bottom.set_xlabel("layer transition")
    bottom.set_title("two random tokens one layer apart", loc="left")
    for panel in ax:
        panel.set_ylabel("cosine")
        panel.set_xlim(-0.4, n - 0.6)
    top.figure.suptitle("random-pair cosine (mean, 95 % CI resampling sentences)", fontsize=10)
    return ax


def plot_norm_parts(parts: dict, ax=None, token_norms=None, token_name: str = "this token"):
    """What each LayerNorm contributes to the length, in two panels on one scale, each line
    named at its end. Top: ‖h‖, median and interquartile band over the data tokens, and one
    token's ‖h‖. Bottom: the parts of h = γ⊙ẑ + β (ẑ: the standardised vector, γ and β:
    LayerNorm's weight and bias): ‖γ⊙ẑ‖ = ‖h − β‖ (median, band), ‖γ‖ (what ‖γ⊙ẑ‖ would be if
    ẑ spread evenly over the dimensions) and ‖β‖. Returns the two axes; ``ax``: a pair of axes."""
    import matplotlib.pyplot as plt

    norm, scaled = to_numpy(parts["norm"]), to_numpy(parts["scaled"])
    if ax is None:
        _, ax = plt.subplots(2, 1, figsize=(FIG_WIDTH_IN, 5.2), sharex=True, sharey=True, layout="constrained")
    top, bottom = ax
    x = np.arange(norm.shape[1])
    end = x[-1]
    plot_median_band(norm, ax=top, x=x, label="‖h‖, data tokens: median", color=NORMAL)
    ends, colors = {"‖h‖: data median": np.median(norm[:, -1])}, {"‖h‖: data median": NORMAL}
    if token_norms is not None:
        top.plot(x, to_numpy(token_norms), "D:", color=HIGHLIGHT, label=f"‖h‖ of {token_name}")
        ends[f"‖h‖ of {token_name}"] = float(to_numpy(token_norms)[-1])
        colors[f"‖h‖ of {token_name}"] = HIGHLIGHT
    top.set_title(f"length of the hidden state (band: middle half of {norm.shape[0]} tokens)", loc="left")
    plot_median_band(scaled, ax=bottom, x=x, label="‖γ⊙ẑ‖ = ‖h − β‖: median", color="tab:purple",
                     band_label="interquartile band of ‖γ⊙ẑ‖")
    gamma, beta = to_numpy(parts["gamma"]), to_numpy(parts["beta"])
    bottom.plot(x, gamma, "^--", color="tab:green", label="‖γ‖ (ẑ spread evenly)")
    bottom.plot(x, beta, "v--", color="tab:brown", label="‖β‖")
    bottom.set_title("LayerNorm's parts: h = γ⊙ẑ + β", loc="left")
    parts_ends = {"‖γ⊙ẑ‖ (median)": float(np.median(scaled[:, -1])), "‖γ‖": float(gamma[-1]), "‖β‖": float(beta[-1])}
    parts_colors = {"‖γ⊙ẑ‖ (median)": "tab:purple", "‖γ‖": "tab:green", "‖β‖": "tab:brown"}
    for panel in ax:
        panel.set_ylabel("L2 norm")
        panel.set_ylim(bottom=0)
        panel.set_xlim(-0.3, end + 0.3)
    bottom.set_xticks(x, layer_labels(len(x)))
    bottom.set_xlabel("layer (each ends in LayerNorm)")
    top.figure.get_layout_engine().set(w_pad=0.1)
    top.figure.canvas.draw()
    end_labels(top, end + 0.3, ends, colors)
    end_labels(bottom, end + 0.3, parts_ends, parts_colors)
    top.figure.suptitle("L2 norm per layer and its LayerNorm parts", fontsize=10)
    return ax


def plot_top_dimension_share(share, dims, hidden_size: int, ax=None, ylabel: str = "share of ‖h‖²",
                             title: str | None = None):
    """Share (in %) of a per-dimension total (by default ‖h‖²; e.g. the random-pair cosine)
    carried by the ``k`` largest dimensions per layer (bars; above each, the share and the
    dimensions' ids, one per line, largest first) against the ``k / H`` an even spread would give."""
    share, dims = 100 * to_numpy(share), to_numpy(dims)
    k = dims.shape[1]
    ax = new_axes(ax, (FIG_WIDTH_IN, 3.6))
    x = np.arange(len(share))
    bars = ax.bar(x, share, color=NORMAL, width=0.6)
    even = 100 * k / hidden_size
    ax.axhline(even, color="tab:grey", ls=":")
    for bar, ids, value in zip(bars, dims, share):
        ax.annotate(f"{value:.0f}%\n" + "\n".join(f"#{int(i)}" for i in ids),
                    (bar.get_x() + bar.get_width() / 2, bar.get_height()), xytext=(0, 2), textcoords="offset points",
                    ha="center", va="bottom", fontsize=8, linespacing=1.0)
    ax.set_xticks(x, layer_labels(len(x)))
    ax.figure.canvas.draw()  # room above the tallest bar for its share and k ids
    text_h = (k + 1) * 8 * 1.25 / 72 * ax.figure.dpi  # pixels
    axes_h = ax.get_window_extent().height
    top = max(float(share.max()), 2 * even) / max(1e-6, 1 - text_h / axes_h - 0.03)
    ax.set_ylim(0, top)
    ax.set_xlabel(f"layer (above each bar: the share, then the ids of its {k} dimensions)\n"
                  f"dotted line: an even spread, {k}/{hidden_size} = {even:.1f}%")
    ax.set_ylabel(ylabel if "%" in ylabel else f"{ylabel} (%)")
    ax.set_title(title or f"share of the squared length in the {k} largest dimensions")
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
        cols = min(k, 2)
        rows = -(-k // cols)
        side = FIG_WIDTH_IN / cols
        fig, axes = plt.subplots(rows, cols, figsize=(FIG_WIDTH_IN, rows * side + 0.4), squeeze=False,
                                 layout="constrained")
        axes = list(axes.flat)
        for extra in axes[k:]:
            extra.set_visible(False)
        axes = axes[:k]
        groups = [[i] for i in range(k)]
        fig.suptitle("trajectory through the layers (PCA of all tokens at all layers; arrows: emb → last)",
                     fontsize=10)
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
