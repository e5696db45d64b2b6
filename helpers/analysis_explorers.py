"""Explorers for lessons 04-06 (see :class:`helpers.widgets.Explorer`).

Each one is built on a cached :class:`~helpers.trace.Trace`; moving a control only
changes existing artists (bar heights, line data, image data, colours, text).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

from helpers.analysis import _check_trace, interlayer_similarity, layer_norms, load_sentences
from helpers.analysis_plots import head_line_colors, layer_labels, plot_head_lines
from helpers.trace import trace_text
from helpers.widgets import Explorer

HIGHLIGHT, NORMAL = "tab:orange", "tab:blue"


def _token_dropdown(trace, value=0, description="token"):
    import ipywidgets as widgets

    trace.check_token(value)
    options = [(f"{i}: {t}", i) for i, t in enumerate(trace.tokens)]
    return widgets.Dropdown(options=options, value=value, description=description)


def _slider(low, high, value, description):
    import ipywidgets as widgets

    if not low <= value <= high:
        raise ValueError(f"{description} {value!r} is out of range: valid values are {low} to {high}.")
    return widgets.IntSlider(min=low, max=high, value=value, description=description)


def _benchmark_trace(tokenizer, model):
    return trace_text(tokenizer, model, load_sentences()[0])


class LayerWalkExplorer(Explorer):
    """Lesson 04: one token at one layer -- its norm per layer, its similarity to itself at
    every other layer, and its first few dimensions."""

    def __init__(self, trace, token: int = 0, layer: int = 0, n_dims: int = 16):
        self.trace = _check_trace(trace)
        self.n_dims = max(1, min(int(n_dims), trace.hidden_size))
        # Cache everything the controls can ask for: per-token norms and layer-to-layer cosines.
        self._norms = torch.stack([layer_norms(trace, t) for t in range(trace.seq_len)]).numpy()
        self._sims = torch.stack([interlayer_similarity(trace, t) for t in range(trace.seq_len)]).numpy()
        self._dims = torch.stack(trace.hidden_states)[:, :, : self.n_dims].numpy()  # [L+1, seq, d]
        controls = {
            "token": _token_dropdown(trace, token),
            "layer": _slider(0, trace.num_layers, layer, "layer"),
        }
        super().__init__(controls)

    def _build_figure(self, token, layer):
        n = self.trace.num_layers + 1
        fig, (ax_norm, ax_sim, ax_dim) = plt.subplots(1, 3, figsize=(12, 3.2))
        self.norm_bars = ax_norm.bar(range(n), self._norms[token], color=NORMAL)
        ax_norm.set_xticks(range(n), layer_labels(n))
        ax_norm.set_ylim(0, self._norms.max() * 1.1)
        ax_norm.set_title("L2 norm per layer", fontsize=9)
        (self.sim_line,) = ax_sim.plot(range(n), self._sims[token, layer], "o-")
        (self.sim_marker,) = ax_sim.plot([layer], [1.0], "o", color=HIGHLIGHT, ms=10)
        ax_sim.set_xticks(range(n), layer_labels(n))
        ax_sim.set_ylim(min(0.0, float(self._sims.min())) - 0.05, 1.05)
        ax_sim.set_title("cosine with this layer", fontsize=9)
        self.dim_bars = ax_dim.bar(range(self.n_dims), self._dims[layer, token], color=NORMAL)
        lim = float(np.abs(self._dims).max()) * 1.1
        ax_dim.set_ylim(-lim, lim)
        ax_dim.set_title(f"first {self.n_dims} dimensions", fontsize=9)
        ax_dim.set_xlabel("dimension")
        self.suptitle = fig.suptitle("")
        fig.tight_layout(rect=(0, 0, 1, 0.94))  # leave room for the suptitle
        self._update_artists(token, layer)
        return fig

    def dynamic_artists(self) -> list:
        return [*self.norm_bars, self.sim_line, self.sim_marker, *self.dim_bars, self.suptitle]

    def _update_artists(self, token, layer):
        for i, bar in enumerate(self.norm_bars):
            bar.set_height(self._norms[token, i])
            bar.set_color(HIGHLIGHT if i == layer else NORMAL)
        self.sim_line.set_ydata(self._sims[token, layer])
        self.sim_marker.set_data([layer], [self._sims[token, layer, layer]])
        for bar, h in zip(self.dim_bars, self._dims[layer, token]):
            bar.set_height(h)
        label = "embeddings" if layer == 0 else f"layer {layer}"
        self.suptitle.set_text(f"token {token} {self.trace.tokens[token]!r} at {label}")

    @classmethod
    def for_benchmark(cls, tokenizer, model):
        trace = _benchmark_trace(tokenizer, model)
        values = [{"token": t % trace.seq_len, "layer": l % (trace.num_layers + 1)} for t, l in zip(range(1, 6), range(5))]
        return cls(trace), values


class HeadGridExplorer(Explorer):
    """Lesson 05: all heads of one layer as a grid of attention maps; layer on a slider."""

    def __init__(self, trace, layer: int = 1):
        self.trace = _check_trace(trace)
        self._att = torch.stack(trace.attentions).numpy()  # [L, heads, q, k]
        super().__init__({"layer": _slider(1, trace.num_layers, layer, "layer")})

    def _build_figure(self, layer):
        heads = self.trace.num_heads
        cols = math.ceil(math.sqrt(heads))
        rows = math.ceil(heads / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(2.1 * cols, 2.1 * rows + 0.4), squeeze=False)
        self.images = []
        for h, ax in enumerate(axes.flat):
            ax.set_xticks([])
            ax.set_yticks([])
            if h >= heads:
                ax.axis("off")
                continue
            self.images.append(ax.imshow(self._att[layer - 1, h], vmin=0, vmax=1, cmap="viridis"))
            ax.set_title(f"head {h}", fontsize=8)
        self.suptitle = fig.suptitle("")
        fig.tight_layout(rect=(0, 0, 1, 0.94))  # leave room for the suptitle
        self._update_artists(layer)
        return fig

    def dynamic_artists(self) -> list:
        return [*self.images, self.suptitle]

    def _update_artists(self, layer):
        for h, im in enumerate(self.images):
            im.set_data(self._att[layer - 1, h])
        self.suptitle.set_text(f"layer {layer}: rows = queries, columns = keys ({self.trace.seq_len} tokens)")

    @classmethod
    def for_benchmark(cls, tokenizer, model):
        trace = _benchmark_trace(tokenizer, model)
        return cls(trace), [{"layer": l} for l in range(1, trace.num_layers + 1)]


class HeadLinesExplorer(Explorer):
    """Lesson 05: one head as lines from query tokens (left) to key tokens (right),
    opacity proportional to the attention weight."""

    def __init__(self, trace, layer: int = 1, head: int = 0):
        self.trace = _check_trace(trace)
        self._att = torch.stack(trace.attentions).numpy()
        controls = {
            "layer": _slider(1, trace.num_layers, layer, "layer"),
            "head": _slider(0, trace.num_heads - 1, head, "head"),
        }
        super().__init__(controls)

    def _build_figure(self, layer, head):
        n = self.trace.seq_len
        fig, ax = plt.subplots(figsize=(4.5, 0.28 * n + 1.5))
        plot_head_lines(self._att[layer - 1, head], self.trace.tokens, ax=ax)
        self.lines = ax.collections[0]
        self.title = ax.title
        self._update_artists(layer, head)
        return fig

    def dynamic_artists(self) -> list:
        return [self.lines, self.title]

    def _update_artists(self, layer, head):
        self.lines.set_color(head_line_colors(self._att[layer - 1, head]))
        self.title.set_text(f"layer {layer}, head {head}")  # short: the title is redrawn on every move

    @classmethod
    def for_benchmark(cls, tokenizer, model):
        trace = _benchmark_trace(tokenizer, model)
        values = [{"layer": 1 + i % trace.num_layers, "head": i % trace.num_heads} for i in range(6)]
        return cls(trace), values


class NeighbourExplorer(Explorer):
    """Lesson 06: cosine between one token and every token of its sentence at one layer."""

    def __init__(self, trace, token: int = 0, layer: int = 0):
        self.trace = _check_trace(trace)
        stack = F.normalize(torch.stack(trace.hidden_states), dim=-1)
        self._cos = (stack @ stack.transpose(1, 2)).numpy()  # [L+1, seq, seq]
        controls = {
            "token": _token_dropdown(trace, token),
            "layer": _slider(0, trace.num_layers, layer, "layer"),
        }
        super().__init__(controls)

    def _build_figure(self, token, layer):
        tokens = self.trace.tokens
        fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(tokens)), 3.2))
        self.bars = ax.bar(range(len(tokens)), self._cos[layer, token], color=NORMAL)
        ax.set_xticks(range(len(tokens)), tokens, rotation=70, fontsize=8)
        ax.set_ylim(min(0.0, float(self._cos.min())) - 0.05, 1.05)
        ax.set_ylabel("cosine")
        self.title = ax.set_title("", fontsize=9)
        fig.tight_layout()
        self._update_artists(token, layer)
        return fig

    def dynamic_artists(self) -> list:
        return [*self.bars, self.title]

    def _update_artists(self, token, layer):
        row = self._cos[layer, token]
        for i, bar in enumerate(self.bars):
            bar.set_height(row[i])
            bar.set_color(HIGHLIGHT if i == token else NORMAL)
        others = np.delete(np.arange(len(row)), token)
        best = others[np.argmax(row[others])]
        label = "embeddings" if layer == 0 else f"layer {layer}"
        self.title.set_text(
            f"{self.trace.tokens[token]!r} at {label}: nearest is {self.trace.tokens[best]!r} ({row[best]:.2f})"
        )

    @classmethod
    def for_benchmark(cls, tokenizer, model):
        trace = _benchmark_trace(tokenizer, model)
        values = [{"token": 1 + i % (trace.seq_len - 1), "layer": i % (trace.num_layers + 1)} for i in range(6)]
        return cls(trace), values
