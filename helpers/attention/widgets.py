"""Attention explorers (lessons 02 and 08), built on :class:`helpers.common.explorer.Explorer`:
a control move only changes existing artists from the cached trace."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import LineCollection

from helpers.attention.compute import attention_by_word, word_groups
from helpers.attention.plots import head_line_colors, head_line_segments, plot_head_lines, token_window
from helpers.common.data import load_sentences
from helpers.common.explorer import Explorer, LabelStrip, int_slider
from helpers.common.style import FIG_WIDTH_IN, SEQUENTIAL

HEAD_WINDOW = 32  # tokens the head explorer shows at once: with their labels they fit the page's column
MIN_PITCH = 12  # pixels per token row: an 8 pt label's height
from helpers.model.trace import check_trace, device_of, trace_text


class AttentionHeadExplorer(Explorer):
    """Layer and head sliders over one cached :class:`~helpers.model.trace.Trace`.

    Moving a slider swaps the heatmap's data (``im.set_data``) and its title, which gives the
    largest probability shown (every head is drawn on the same 0-1 scale); the model never
    runs again. With more tokens than fit the page readably (:data:`HEAD_WINDOW`)
    the heatmap shows a window of that many queries and keys, a third slider moves it, and
    the title says which tokens are shown; the token labels are texts rewritten in place.
    """

    def __init__(self, trace, layer: int = 1, head: int = 0, window: int | None = None, by_word: bool = False,
                 word_starts=None):
        import ipywidgets as widgets

        self.trace = check_trace(trace)
        trace.check_layer(layer, allow_embeddings=False)
        trace.check_head(head)
        # [L, heads, q, k]: one slice per move; by_word: words instead of WordPieces (attention_units)
        self._att, self.labels, self.unit = attention_units(trace, by_word, word_starts)
        self.n = len(self.labels)
        self.window = token_window(self.n, 0, HEAD_WINDOW if window is None else window)[1]  # its size
        controls = {
            "layer": widgets.IntSlider(value=layer, min=1, max=trace.num_layers, description="layer"),
            "head": widgets.IntSlider(value=head, min=0, max=trace.num_heads - 1, description="head"),
        }
        if self.window < self.n:
            controls["start"] = int_slider(0, self.n - self.window, 0, f"first {self.unit}")
        super().__init__(controls, start=0)

    def _title(self, layer: int, head: int, start: int) -> str:
        # Short: the title is redrawn on every move, and text is the costly part of a redraw.
        # Every head shares the 0-1 colour scale, so the title gives the largest probability
        # shown: a head that spreads its attention is dark everywhere, and this says how dark.
        where = f"  |  {self.unit}s {start}\u2013{start + self.window - 1}" if self.window < self.n else ""
        peak = float(self._window(layer, head, start).max())
        return f"layer {layer} of {self.trace.num_layers}, head {head}{where}  |  max {peak:.2f}"

    def _window(self, layer: int, head: int, start: int):
        stop = start + self.window
        return self._att[layer - 1, head, start:stop, start:stop]

    def _build_figure(self, layer: int, head: int, start: int):
        # Laid out in whole pixels: every token gets `pitch` pixels, so the pre-rendered
        # label strips (LabelStrip) line up with the heatmap's cells exactly.
        # The whole picture fits the page's column (style.FIG_WIDTH_IN): the pitch shrinks with
        # the window, never below MIN_PITCH pixels (an 8 pt label's height).
        W, dpi = self.window, plt.rcParams["figure.dpi"]
        thick = LabelStrip(self.labels, MIN_PITCH, dpi=dpi).thickness
        windowed = W < self.n
        left, bottom, top, right = 28 + thick, 26 + thick, 66 if windowed else 50, 84
        pitch = int(min(28, max(14, 400 // W), (int(FIG_WIDTH_IN * dpi) - left - right) // W))
        if pitch < MIN_PITCH:
            raise ValueError(f"a window of {W} {self.unit}s does not fit the page with readable labels: "
                             f"use window={(int(FIG_WIDTH_IN * dpi) - left - right) // MIN_PITCH} or fewer.")
        self._x_strip = LabelStrip(self.labels, pitch, vertical=True, dpi=dpi)
        self._y_strip = LabelStrip(self.labels, pitch, dpi=dpi)
        side = W * pitch
        width, height = left + side + right, bottom + side + top
        fig = plt.figure(figsize=(width / dpi, height / dpi), dpi=dpi)
        ax = fig.add_axes((left / width, bottom / height, side / width, side / height))
        self.im = ax.imshow(self._window(layer, head, start), cmap=SEQUENTIAL, vmin=0.0, vmax=1.0,
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
        if self.unit == "word":
            heading = "attention by word, one head (rows = queries: mean of a word's pieces; keys: summed)"
        if windowed:
            heading += (f"\na window of {W} of the {self.n} {self.unit}s, moved by 'first {self.unit}'; "
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
        token_window(self.n, merged["start"], self.window)
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


def attention_units(trace, by_word: bool = False, word_starts=None):
    """``(attention [L, heads, n, n] as numpy, labels, unit)``: per token, or per word with
    ``by_word=True`` (``attention_by_word`` in ``helpers/attention/compute.py``: keys summed over a
    word's pieces, queries averaged, Clark et al. 2019; ``word_starts`` for Chinese, see
    ``word_groups``)."""
    attentions = torch.stack(trace.attentions)
    if not by_word:
        if word_starts is not None:
            raise ValueError("word_starts groups tokens into words: give it together with by_word=True.")
        return attentions.cpu().numpy(), list(trace.tokens), "token"
    groups = word_groups(trace, word_starts)
    return attention_by_word(attentions, groups).cpu().numpy(), list(groups.labels), "word"


def _benchmark_trace(tokenizer, model, text=None):
    return trace_text(tokenizer, model, load_sentences()[0] if text is None else text)


GRID_PIXELS = 128  # a head's map is shown with at most this many rows and columns


def pooled_maps(att: torch.Tensor, max_size: int = GRID_PIXELS) -> tuple[np.ndarray, int]:
    """Attention maps ``[..., n, n]`` shrunk to at most ``max_size`` rows and columns by taking
    the maximum of each ``block x block`` square (a thin diagonal stays visible), and ``block``."""
    n = att.shape[-1]
    block = max(1, math.ceil(n / max_size))
    if block == 1:
        return att.cpu().numpy(), 1
    lead = att.shape[:-2]
    flat = att.reshape(-1, 1, n, n)
    pad = block * math.ceil(n / block) - n
    flat = torch.nn.functional.pad(flat, (0, pad, 0, pad))  # zeros: attention is never negative
    pooled = torch.nn.functional.max_pool2d(flat, block)
    return pooled.reshape(*lead, *pooled.shape[-2:]).cpu().numpy(), block


class HeadGridExplorer(Explorer):
    """Lesson 08: all heads of one layer as a grid of attention maps; layer on a slider.

    Past :data:`GRID_PIXELS` tokens each map is shown in ``block x block`` squares (their
    maximum), which the title says, so a 512-token input draws as fast as a short one."""

    def __init__(self, trace, layer: int = 1, by_word: bool = False, word_starts=None):
        self.trace = check_trace(trace)
        trace.check_layer(layer, allow_embeddings=False)
        attentions, self.labels, self.unit = attention_units(trace, by_word, word_starts)
        self._att, self.block = pooled_maps(torch.as_tensor(attentions, device=device_of(attentions)))  # [L, heads, m, m]
        # Colour every map once (viridis, 0..1): an update then only swaps RGBA pixels.
        self.cmap = plt.get_cmap(SEQUENTIAL)
        self._rgba = np.stack([self.cmap(np.clip(maps, 0, 1), bytes=True) for maps in self._att])
        super().__init__({"layer": int_slider(1, trace.num_layers, layer, "layer")})

    def _build_figure(self, layer):
        heads = self.trace.num_heads
        cols = math.ceil(math.sqrt(heads))
        rows = math.ceil(heads / cols)
        cell = min(1.8, (FIG_WIDTH_IN - 0.9) / cols)  # the grid and its colourbar fit the page
        fig, axes = plt.subplots(rows, cols, figsize=(cell * cols + 0.9, cell * rows + 0.7), squeeze=False)
        self.images = []
        for h, ax in enumerate(axes.flat):
            ax.set_xticks([])
            ax.set_yticks([])
            if h >= heads:
                ax.axis("off")
                continue
            self.images.append(ax.imshow(self._rgba[layer - 1, h], interpolation="nearest"))
            ax.set_title(f"head {h}", fontsize=8)
        note = "" if self.block == 1 else f"; shown in {self.block}×{self.block} blocks (block maximum)"
        fig.text(0.5, 0.01, f"rows = queries, columns = keys, {len(self.labels)} {self.unit}s in order{note}",
                 ha="center", va="bottom", fontsize=8)
        self.suptitle = fig.suptitle("")
        fig.tight_layout(rect=(0, 0.04, 0.9, 0.93))  # room for the suptitle, the note and the colourbar
        scale = plt.cm.ScalarMappable(norm=plt.Normalize(0, 1), cmap=self.cmap)
        fig.colorbar(scale, cax=fig.add_axes((0.91, 0.15, 0.02, 0.7)), label="attention probability")
        self._update_artists(layer)
        return fig

    def dynamic_artists(self) -> list:
        return [*self.images, self.suptitle]

    def _update_artists(self, layer):
        for h, im in enumerate(self.images):
            im.set_data(self._rgba[layer - 1, h])
        self.suptitle.set_text(f"attention probability of every head, layer {layer}")

    @classmethod
    def for_benchmark(cls, tokenizer, model, text=None):
        trace = _benchmark_trace(tokenizer, model, text)
        return cls(trace), [{"layer": l} for l in range(1, trace.num_layers + 1)]


LINES_WINDOW = 30  # tokens per side; a longer input gets a "start" slider over a window
MIN_LINE_WEIGHT = 0.01  # in a window, fainter lines (opacity < 1 %) are left out: 900 lines stay fast
ROW_PX = 28  # pixels per token row of the lines view


LABEL_CHUNK = 32  # label rows drawn together, the first time the window reaches them


def label_strip(tokens: list[str], width_px: int, align: str, dpi: float) -> np.ndarray:
    """Labels drawn into an RGBA array ``[len(tokens) * ROW_PX, width_px, 4]`` (transparent
    background), one ``ROW_PX``-high row per token. A window of the lines view shows a slice
    of such strips as an image: moving the window swaps pixels instead of laying out 60 text
    labels again."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n = len(tokens)
    fig = Figure(figsize=(width_px / dpi, n * ROW_PX / dpi), dpi=dpi)
    fig.patch.set_alpha(0.0)
    canvas = FigureCanvasAgg(fig)
    x = 1 - 4 / width_px if align == "right" else 4 / width_px
    for i, tok in enumerate(tokens):
        fig.text(x, 1 - (i + 0.5) / n, tok, ha=align, va="center", fontsize=8)
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba())
    out = np.zeros((n * ROW_PX, width_px, 4), dtype=np.uint8)  # exact size, whatever the rounding
    h, w = min(out.shape[0], pixels.shape[0]), min(width_px, pixels.shape[1])
    out[:h, :w] = pixels[:h, :w]
    return out


class HeadLinesExplorer(Explorer):
    """Lesson 08: one head as lines from query tokens (left) to key tokens (right),
    opacity proportional to the attention weight.

    Past :data:`LINES_WINDOW` tokens a line per pair would be unreadable (and 262,144 lines
    at 512 tokens): a ``start`` slider picks a window of that many consecutive tokens, the
    figure says which, lines to keys outside the window are not drawn, nor lines fainter
    than :data:`MIN_LINE_WEIGHT`."""

    def __init__(self, trace, layer: int = 1, head: int = 0, start: int = 0, window: int = LINES_WINDOW,
                 by_word: bool = False, word_starts=None):
        self.trace = check_trace(trace)
        trace.check_layer(layer, allow_embeddings=False)
        trace.check_head(head)
        self._att, self.labels, self.unit = attention_units(trace, by_word, word_starts)
        self.n = len(self.labels)
        self.window = max(2, min(int(window), self.n))
        self.windowed = self.n > self.window
        controls = {
            "layer": int_slider(1, trace.num_layers, layer, "layer"),
            "head": int_slider(0, trace.num_heads - 1, head, "head"),
        }
        if self.windowed:
            controls["start"] = int_slider(0, self.n - self.window, start, "start")
        super().__init__(controls, start=start if self.windowed else 0)

    def _weights(self, layer, head, start):
        stop = start + self.window
        return self._att[layer - 1, head, start:stop, start:stop]

    def _build_figure(self, layer, head, start=0):
        if not self.windowed:
            n = self.window
            fig, ax = plt.subplots(figsize=(4.5, 0.28 * n + 1.5))
            plot_head_lines(self._weights(layer, head, start), self.labels, ax=ax)
            self.lines, self.title = ax.collections[0], ax.title
            self._update_artists(layer, head, start)
            return fig
        # A window: a fixed layout in pixels, so one data unit is exactly ROW_PX pixels and the
        # label strips are shown 1:1.
        w, dpi = self.window, plt.rcParams["figure.dpi"]
        width_px, top_px, bottom_px = 480, 40, 56
        height_px = (w + 1) * ROW_PX + top_px + bottom_px
        fig = plt.figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
        ax = fig.add_axes((0, bottom_px / height_px, 1, (w + 1) * ROW_PX / height_px))
        xlim = (-0.6, 1.6)
        per_unit = width_px / (xlim[1] - xlim[0])
        strip_px = int(0.54 * per_unit)
        self._segments = np.array(head_line_segments(w), dtype=float)
        self.lines = LineCollection([], linewidths=2)
        ax.add_collection(self.lines)
        # Token labels (with their positions) live in two pixel strips, drawn chunk by chunk
        # the first time the window reaches them (2 x 512 labels at once would take seconds).
        n = self.n
        self._strip_px, self._dpi = strip_px, dpi
        self._strips = [np.zeros((n * ROW_PX, strip_px, 4), dtype=np.uint8) for _ in range(2)]
        self._drawn_chunks = set()
        self._ensure_labels(start)
        self.strip_images = []
        for strip, x0 in zip(self._strips, (-0.05 - strip_px / per_unit, 1.05)):
            self.strip_images.append(ax.imshow(strip[: w * ROW_PX], extent=(x0, x0 + strip_px / per_unit, -w + 0.5, 0.5),
                                               aspect="auto", interpolation="nearest"))
        ax.text(-0.05, 1, "query", ha="right", va="center", fontsize=8, fontweight="bold")
        ax.text(1.05, 1, "key", ha="left", va="center", fontsize=8, fontweight="bold")
        ax.set_xlim(*xlim)
        ax.set_ylim(-w + 0.5, 1.5)
        ax.axis("off")
        self.title = fig.suptitle(" ", y=1 - 12 / height_px, va="top")
        fig.text(0.5, 6 / height_px, f"a window of {w} of the {self.n} {self.unit}s (slider 'start');\n"
                 f"lines to keys outside it, and lines below {MIN_LINE_WEIGHT:.0%} weight, are not drawn",
                 ha="center", va="bottom", fontsize=8)
        self._update_artists(layer, head, start)
        return fig

    def _ensure_labels(self, start):
        """Draw the label chunks that the window ``start .. start + window`` needs, once."""
        tokens = self.labels
        for chunk in range(start // LABEL_CHUNK, (start + self.window - 1) // LABEL_CHUNK + 1):
            if chunk in self._drawn_chunks:
                continue
            rows = range(chunk * LABEL_CHUNK, min(len(tokens), (chunk + 1) * LABEL_CHUNK))
            for strip, align in zip(self._strips, ("right", "left")):
                named = [f"{tokens[i]}  {i}" if align == "right" else f"{i}  {tokens[i]}" for i in rows]
                strip[rows.start * ROW_PX : rows.stop * ROW_PX] = label_strip(named, self._strip_px, align, self._dpi)
            self._drawn_chunks.add(chunk)

    def dynamic_artists(self) -> list:
        return [self.lines, self.title, *(self.strip_images if self.windowed else [])]

    def _update_artists(self, layer, head, start=0):
        colors = head_line_colors(self._weights(layer, head, start))
        if not self.windowed:
            self.lines.set_color(colors)
            by = " by word" if self.unit == "word" else ""
            self.title.set_text(f"attention{by} (opacity), layer {layer}, head {head}")  # short: redrawn on every move
            return
        keep = colors[:, 3] >= MIN_LINE_WEIGHT
        self.lines.set_segments(self._segments[keep])
        self.lines.set_color(colors[keep])
        self._ensure_labels(start)
        rows = slice(start * ROW_PX, (start + self.window) * ROW_PX)
        for image, strip in zip(self.strip_images, self._strips):
            image.set_data(strip[rows])
        shown = f"{self.unit}s {start}–{start + self.window - 1}"
        self.title.set_text(f"attention (opacity), layer {layer}, head {head}: {shown}")

    @classmethod
    def for_benchmark(cls, tokenizer, model, text=None):
        trace = _benchmark_trace(tokenizer, model, text)
        windowed = trace.seq_len > LINES_WINDOW
        values = [{"layer": 1 + i % trace.num_layers, "head": i % trace.num_heads,
                   **({"start": (37 * i) % (trace.seq_len - LINES_WINDOW + 1)} if windowed else {})}
                  for i in range(6)]
        return cls(trace), values
