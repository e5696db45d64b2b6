"""Attention explorers (lessons 02 and 05), built on :class:`helpers.common.explorer.Explorer`:
a control move only changes existing artists from the cached trace."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

from helpers.attention.plots import head_line_colors, plot_head_lines, token_window
from helpers.common.data import load_sentences
from helpers.common.explorer import Explorer, LabelStrip, int_slider
from helpers.model.trace import check_trace, trace_text


class AttentionHeadExplorer(Explorer):
    """Layer and head sliders over one cached :class:`~helpers.model.trace.Trace`.

    Moving a slider swaps the heatmap's data (``im.set_data``) and its title; the model never
    runs again. With more tokens than stay readable (:data:`~helpers.attention.plots.MAX_TOKEN_LABELS`)
    the heatmap shows a window of that many queries and keys, a third slider moves it, and
    the title says which tokens are shown; the token labels are texts rewritten in place.
    """

    def __init__(self, trace, layer: int = 1, head: int = 0, window: int | None = None):
        import ipywidgets as widgets

        self.trace = check_trace(trace)
        trace.check_layer(layer, allow_embeddings=False)
        trace.check_head(head)
        self.window = token_window(trace.seq_len, 0, window)[1]  # the window's size
        self._att = torch.stack(trace.attentions).numpy()  # [L, heads, q, k]: one slice per move
        controls = {
            "layer": widgets.IntSlider(value=layer, min=1, max=trace.num_layers, description="layer"),
            "head": widgets.IntSlider(value=head, min=0, max=trace.num_heads - 1, description="head"),
        }
        if self.window < trace.seq_len:
            controls["start"] = int_slider(0, trace.seq_len - self.window, 0, "first token")
        super().__init__(controls, start=0)

    def _title(self, layer: int, head: int, start: int) -> str:
        # Short: the title is redrawn on every move, and text is the costly part of a redraw.
        where = f"  |  tokens {start}\u2013{start + self.window - 1}" if self.window < self.trace.seq_len else ""
        return f"layer {layer} of {self.trace.num_layers}, head {head}{where}"

    def _window(self, layer: int, head: int, start: int):
        stop = start + self.window
        return self._att[layer - 1, head, start:stop, start:stop]

    def _build_figure(self, layer: int, head: int, start: int):
        # Laid out in whole pixels: every token gets `pitch` pixels, so the pre-rendered
        # label strips (LabelStrip) line up with the heatmap's cells exactly.
        W, dpi = self.window, plt.rcParams["figure.dpi"]
        pitch = int(min(28, max(14, 400 // W)))
        self._x_strip = LabelStrip(self.trace.tokens, pitch, vertical=True, dpi=dpi)
        self._y_strip = LabelStrip(self.trace.tokens, pitch, dpi=dpi)
        side, thick = W * pitch, self._y_strip.thickness
        windowed = W < self.trace.seq_len
        left, bottom, top, right = 28 + thick, 26 + thick, 66 if windowed else 50, 96
        width, height = left + side + right, bottom + side + top
        fig = plt.figure(figsize=(width / dpi, height / dpi), dpi=dpi)
        ax = fig.add_axes((left / width, bottom / height, side / width, side / height))
        self.im = ax.imshow(self._window(layer, head, start), cmap="viridis", vmin=0.0, vmax=1.0,
                            aspect="auto", interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        cax = fig.add_axes(((left + side + 14) / width, bottom / height, 14 / width, side / height))
        fig.colorbar(self.im, cax=cax, label="attention probability")
        fig.text((left + side / 2) / width, 6 / height, "key (attended to)", ha="center", va="bottom", fontsize=9)
        fig.text(6 / width, (bottom + side / 2) / height, "query (attending)", ha="left", va="center",
                 rotation=90, fontsize=9)
        self._x_image = fig.figimage(self._x_strip.window(start, W), left, bottom - 3 - self._x_strip.rgba.shape[0],
                                     origin="upper")
        self._y_image = fig.figimage(self._y_strip.window(start, W), left - 3 - thick, bottom, origin="upper")
        self.ax = ax
        ax.set_title(self._title(layer, head, start), fontsize=9)
        heading = "attention probability of one head (rows = queries)"
        if windowed:
            heading += (f"\na window of {W} of the {self.trace.seq_len} tokens, moved by 'first token'; "
                        "rows need not sum to 1 inside it")
        fig.text(0.5, 1 - 4 / height, heading, ha="center", va="top", fontsize=9)
        return fig

    def dynamic_artists(self) -> list:
        return [self.im, self.ax.title, self._x_image, self._y_image]

    def _update_artists(self, layer: int, head: int, start: int) -> None:
        self.im.set_data(self._window(layer, head, start))
        self.ax.set_title(self._title(layer, head, start), fontsize=9)
        self._x_image.set_data(self._x_strip.window(start, self.window))
        self._y_image.set_data(self._y_strip.window(start, self.window))

    def update(self, **values) -> None:
        """Validate the slider values (the same messages as the trace) and redraw in place."""
        merged = {**self.values, **values}
        self.trace.check_layer(merged["layer"], allow_embeddings=False)
        self.trace.check_head(merged["head"])
        token_window(self.trace.seq_len, merged["start"], self.window)
        super().update(**values)

    @classmethod
    def for_benchmark(cls, tokenizer, model, text: str | None = None):
        trace = trace_text(tokenizer, model, text or "The bank by the river was unbelievably quiet this morning.")
        explorer = cls(trace)
        values = [{"layer": l, "head": h} for l in range(1, trace.num_layers + 1) for h in range(min(2, trace.num_heads))]
        if "start" in explorer.controls:  # a long input: move the window too
            last = trace.seq_len - explorer.window
            values = [{**v, "start": (k * explorer.window // 2) % (last + 1)} for k, v in enumerate(values)]
        return explorer, values


def _benchmark_trace(tokenizer, model):
    return trace_text(tokenizer, model, load_sentences()[0])


class HeadGridExplorer(Explorer):
    """Lesson 05: all heads of one layer as a grid of attention maps; layer on a slider."""

    def __init__(self, trace, layer: int = 1):
        self.trace = check_trace(trace)
        self._att = torch.stack(trace.attentions).numpy()  # [L, heads, q, k]
        super().__init__({"layer": int_slider(1, trace.num_layers, layer, "layer")})

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
        self.trace = check_trace(trace)
        self._att = torch.stack(trace.attentions).numpy()
        controls = {
            "layer": int_slider(1, trace.num_layers, layer, "layer"),
            "head": int_slider(0, trace.num_heads - 1, head, "head"),
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
