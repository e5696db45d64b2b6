"""Interactive explorers that feel instant.

An :class:`Explorer` owns one matplotlib figure, drawn once. A control change calls
:meth:`Explorer.update`, which only changes existing artists (``set_data``,
``set_height``, tick labels) from cached results -- the model never runs again -- and
re-encodes the figure into an ``ipywidgets.Image``. That works the same on ipywidgets 7.7
(Colab) and 8, needs no ipympl, and costs tens of milliseconds instead of the hundreds a
fresh seaborn figure costs. :meth:`Explorer.redraw_naive` builds the figure from scratch
and exists only so the benchmark can show the difference.

Where a subclass names the artists an update changes (``dynamic_artists()``, e.g. the
heatmap image and the title), the static rest of the figure is drawn once and kept as a
bitmap; an update restores that bitmap and draws only those artists, plus the axes frame
drawn above them, in the order a full draw uses (blitting), so the picture is the same,
pixel for pixel, as drawing everything again (``tests/test_widgets.py`` checks this). The
canvas's pixels are then encoded by a small PNG writer (:func:`canvas_png`). When an update
must change a static part (an axis limit), it calls ``_static_changed()`` and that one
render draws the whole figure.

Subclasses implement ``_build_figure(**values)`` (create fig and artists; return fig),
``_update_artists(**values)``, optionally ``redraw_naive(**values)`` (e.g. a fresh seaborn
heatmap), and the classmethod ``for_benchmark(tokenizer, model, text=None)`` returning
``(explorer, [values, ...])``: an explorer built on ``text`` when it is given (the benchmark
passes a text at the model's maximum input length; the explorer must truncate it with the
course's warning, never fail) or on a sentence of its choosing otherwise, and a list of at
least two control-value dicts to cycle through. ``benchmarks/`` finds every subclass through
:func:`explorer_classes`. Each explorer records how long it took to build
(``build_seconds``, wall clock, and ``build_cpu_seconds``, this process's CPU time): the
course's targets are a build <= 2 s and an update p95 <= 50 ms at the maximum input length.
A view that cannot stay readable at hundreds of tokens (token tick labels) shows a window or
the top-k keys and says so on the figure.

**Static output.** Displaying an explorer publishes one output bundle holding the live
widget view *and* a PNG of the figure as it is at that moment, plus a plain-text line
(:meth:`Explorer._repr_mimebundle_`). A live front end (JupyterLab, Colab, ipywidgets 7 or 8)
shows the widget; a viewer without the widget state -- GitHub, the course website, nbconvert
on a notebook saved without widget state, or ``jupyter nbconvert --execute
--ExecutePreprocessor.store_widget_state=False`` -- shows the PNG. ``bash course.sh`` configures the course environment's ``jupyter nbconvert --execute``
to save no widget state (``$VENV/etc/jupyter/jupyter_nbconvert_config.json``), so its HTML
export shows every explorer as that image, offline too; with widget state saved, nbconvert's
HTML would render the widget instead, with the ipywidgets JavaScript from a CDN.
"""

from __future__ import annotations

import base64
import functools
import io
import struct
import time
import zlib

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.style import HIGHLIGHT, NORMAL  # noqa: F401 - the explorers' two bar colours


def figure_png(fig) -> bytes:
    """Encode a figure as PNG bytes the usual way: a full draw through ``savefig``, at the
    figure's own dpi so the picture matches what an explorer shows."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi="figure")
    return buf.getvalue()


def canvas_png(canvas) -> bytes:
    """Encode what an Agg canvas already holds as PNG, without drawing it again.

    A minimal PNG writer (numpy + zlib) instead of PIL: no per-row filter search and the
    fastest zlib level, because the image is re-encoded on every slider move and the
    figures are mostly flat colour, which compresses well without filtering. Lossless:
    RGB when the canvas is opaque (the usual white figure), RGBA otherwise.
    """
    rgba = np.asarray(canvas.buffer_rgba())
    opaque = bool(rgba[:, :, 3].min() == 255)
    pixels = rgba[:, :, :3] if opaque else rgba
    height, width, channels = pixels.shape
    rows = np.zeros((height, 1 + width * channels), dtype=np.uint8)  # byte 0 of a row: filter 0 (none)
    rows[:, 1:] = pixels.reshape(height, -1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2 if opaque else 6, 0, 0, 0)
    return b"".join([_PNG_SIGNATURE, _png_chunk(b"IHDR", header),
                     _png_chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)), _png_chunk(b"IEND", b"")])


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_chunk(tag: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))


class LabelStrip:
    """Text labels drawn once into one RGBA strip, so an explorer can show any window of them
    by slicing an array instead of rendering text on every update.

    Rendering a token label costs about a millisecond; an explorer that scrolls a window of 40
    tokens through a 512-token input would re-render 80 labels per move. Here every label is
    rendered once (FreeType, as matplotlib's Agg backend does) into a band of ``pitch`` pixels;
    :meth:`window` returns the rows (``vertical=False``: labels read left to right, right-aligned,
    one per row) or columns (``vertical=True``: labels rotated 90 degrees, one per column, their
    ends at the top) of tokens ``start .. start + size - 1``. Show them with ``fig.figimage``
    (no resampling, exact pixels) and swap windows with ``set_data``.
    """

    def __init__(self, labels: list[str], pitch: int, *, vertical: bool = False, fontsize: float = 8.0,
                 dpi: float = 100.0, max_chars: int = 16, color=(0, 0, 0)):
        if isinstance(pitch, bool) or not isinstance(pitch, int) or pitch < 4:
            raise ValueError(f"pitch must be an int of at least 4 pixels, got {pitch!r}.")
        if not labels:
            raise ValueError("labels is empty: give at least one label.")
        self.pitch, self.vertical, self.n = pitch, vertical, len(labels)
        masks = [self._render(self._short(str(t), max_chars), fontsize, dpi) for t in labels]
        self.thickness = max([m[0].shape[1] for m in masks] + [1]) + 2  # pixels across the band
        coverage = np.zeros((self.n * pitch, self.thickness), dtype=np.uint8)
        for i, (mask, ascent) in enumerate(masks):
            h, w = mask.shape
            baseline = i * pitch + (pitch + ascent) // 2  # same baseline in every band: labels line up
            top = max(i * pitch, baseline - ascent)
            rows = min(h, (i + 1) * pitch - top)
            coverage[top:top + rows, self.thickness - 1 - w:self.thickness - 1] = mask[:rows]
        if vertical:
            coverage = np.rot90(coverage)  # text reads upwards; label ends at the top, tokens left to right
        self.rgba = np.zeros((*coverage.shape, 4), dtype=np.uint8)
        self.rgba[..., :3] = np.array(color, dtype=float)[:3] * 255
        self.rgba[..., 3] = coverage

    @staticmethod
    def _short(text: str, max_chars: int) -> str:
        return text if len(text) <= max_chars else text[: max_chars - 1] + "\u2026"

    @staticmethod
    def _render(text: str, fontsize: float, dpi: float):
        """``(coverage mask [h, w] uint8, pixels above the baseline)`` of one label."""
        from matplotlib.backends.backend_agg import get_hinting_flag
        from matplotlib.font_manager import FontProperties, findfont, get_font

        from matplotlib.font_manager import fontManager

        prop = FontProperties(size=fontsize)
        # every family of font.family, as Matplotlib's own text does: the course's Chinese font
        # draws what DejaVu lacks (one font alone would leave Chinese labels as empty boxes)
        find_all = getattr(fontManager, "_find_fonts_by_props", None)
        font = get_font(find_all(prop) if find_all else findfont(prop))
        font.clear()
        font.set_size(fontsize, dpi)
        font.set_text(text or " ", 0.0, flags=get_hinting_flag())
        font.draw_glyphs_to_bitmap(antialiased=True)
        mask = np.asarray(font.get_image()).copy()
        descent = int(round(font.get_descent() / 64))
        return mask, mask.shape[0] - descent

    def window(self, start: int, size: int) -> np.ndarray:
        """The RGBA pixels of labels ``start .. start + size - 1``."""
        if not 0 <= start <= self.n - size:
            raise ValueError(f"window {start}..{start + size - 1} is outside the {self.n} labels.")
        lo, hi = start * self.pitch, (start + size) * self.pitch
        return self.rgba[:, lo:hi] if self.vertical else self.rgba[lo:hi]


def explorer_classes(failures: list[str] | None = None) -> list[type]:
    """Every :class:`Explorer` subclass, after importing every ``helpers.*`` module (all topic packages) so that
    all of them are defined. A module that fails to import raises, or, when ``failures``
    is given, is named there and skipped (the benchmark reports it and goes on)."""
    import importlib
    import pkgutil

    import helpers

    for info in pkgutil.walk_packages(helpers.__path__, prefix="helpers."):
        if info.name == "helpers.__main__":
            continue
        try:
            importlib.import_module(info.name)
        except Exception as err:  # noqa: BLE001 - see the docstring
            if failures is None:
                raise
            failures.append(f"{info.name}: {type(err).__name__}: {err}")
    found, todo = [], list(Explorer.__subclasses__())
    while todo:
        cls = todo.pop(0)
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


def int_slider(low: int, high: int, value: int, description: str):
    """An ``IntSlider`` (ipywidgets 7 and 8) that refuses a start value outside ``low..high``."""
    import ipywidgets as widgets

    if not low <= value <= high:
        raise ValueError(f"{description} {value!r} is out of range: valid values are {low} to {high}.")
    return widgets.IntSlider(min=low, max=high, value=value, description=description)


def token_dropdown(trace, value: int = 0, description: str = "token"):
    """A ``Dropdown`` of a trace's tokens labelled ``"3: bank"``; its value is the position."""
    import ipywidgets as widgets

    trace.check_token(value)
    options = [(f"{i}: {t}", i) for i, t in enumerate(trace.tokens)]
    return widgets.Dropdown(options=options, value=value, description=description)


WIDGET_VIEW_MIMETYPE = "application/vnd.jupyter.widget-view+json"


class Explorer:
    """Base class: controls + one figure updated in place. See the module docstring."""

    build_seconds: float | None = None
    build_cpu_seconds: float | None = None

    def __init_subclass__(cls, **kwargs):
        """Time every subclass's whole constructor (its own preparation included), once,
        at the outermost ``__init__``: ``build_seconds`` and ``build_cpu_seconds``."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        @functools.wraps(init)
        def timed_init(self, *args, **kw):
            if getattr(self, "_timing_build", False):
                return init(self, *args, **kw)
            self._timing_build = True
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                init(self, *args, **kw)
            finally:
                self._timing_build = False
            end = time.perf_counter()
            self.build_span = (wall, end)  # lets a benchmark tell model time inside the build apart
            self.build_seconds = end - wall
            self.build_cpu_seconds = time.process_time() - cpu

        cls.__init__ = timed_init

    def __init__(self, controls: dict, **initial):
        import ipywidgets as widgets

        self.controls = controls
        self.values = {name: ctl.value for name, ctl in controls.items()}
        self.values.update(initial)
        self._syncing = False
        self._background = None
        with plt.ioff():
            self.fig = self._build_figure(**self.values)
        plt.close(self.fig)  # we show it through the Image widget, not the inline backend
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(self.fig)  # a canvas we can blit on, whatever the notebook backend
        width, _ = self.fig.canvas.get_width_height()
        # Shown at the figure's own size (1 figure pixel = 1 screen pixel, so 8 pt stays 8 pt):
        # a flex box would otherwise stretch the image to the output's width.
        self.image = widgets.Image(value=self._render(), format="png",
                                   layout=widgets.Layout(width=f"{width}px", max_width="100%", height="auto"))
        for name, ctl in controls.items():
            ctl.observe(self._on_change(name), names="value")
        self.widget = widgets.VBox([widgets.HBox(list(controls.values())), self.image])

    def _on_change(self, name):
        def handler(change):
            if not self._syncing:
                self.update(**{name: change["new"]})

        return handler

    def dynamic_artists(self) -> list:
        """The artists an update changes; empty means "redraw the whole figure"."""
        return []

    def _static_changed(self) -> None:
        """Call from ``_update_artists`` when a static part changed (axis limits, ticks):
        the next render draws the whole figure once and keeps it as the new background."""
        self._background = None

    def _render(self) -> bytes:
        canvas = self.fig.canvas
        if not self.dynamic_artists():
            canvas.draw()
        else:
            if self._background is None:
                self._blit_order = self._artists_to_blit()
                for artist in self._blit_order:
                    artist.set_animated(True)  # left out of the static background
                canvas.draw()
                self._background = canvas.copy_from_bbox(self.fig.bbox)
            canvas.restore_region(self._background)
            for artist in self._blit_order:
                self.fig.draw_artist(artist)
        return canvas_png(canvas)

    def _artists_to_blit(self) -> list:
        """The dynamic artists plus the spines drawn above them (a heatmap or a bar touches
        its axes frame), in the order a full draw paints them: axes by axes, by z-order,
        figure-level artists last. The blitted picture then equals a full draw, pixel for pixel."""
        dynamic = self.dynamic_artists()
        ordered = []
        for ax in self.fig.axes:
            mine = [a for a in dynamic if a.axes is ax]
            if mine:
                low = min(a.get_zorder() for a in mine)
                frame = [s for s in ax.spines.values() if ax.axison and s.get_visible() and s.get_zorder() > low]
                ordered += sorted(mine + frame, key=lambda a: a.get_zorder())
        return ordered + [a for a in dynamic if a.axes is None]

    def update(self, **values) -> None:
        """Apply new control values to the existing artists and refresh the image.

        Controls are moved to match, so a call from code and a slider move look the same.
        """
        self.values.update(values)
        self._sync_controls(values)
        self._update_artists(**self.values)
        self.image.value = self._render()

    def _sync_controls(self, values) -> None:
        self._syncing = True
        try:
            for name, value in values.items():
                control = self.controls.get(name)
                if control is not None and control.value != value:
                    control.value = value
        finally:
            self._syncing = False

    def redraw_naive(self, **values) -> bytes:
        """The slow way, for the benchmark: a brand-new figure, encoded, then closed."""
        merged = {**self.values, **values}
        with plt.ioff():
            fig = self._build_figure(**merged)
        png = figure_png(fig)
        plt.close(fig)
        return png

    @classmethod
    def for_benchmark(cls, tokenizer, model, text: str | None = None):
        """``(explorer, [values, ...])`` for the benchmark and the pixel test: the explorer
        built on ``text`` when given (at the model's maximum input length in the benchmark),
        and at least two control-value dicts to cycle through."""
        raise NotImplementedError(f"{cls.__name__} does not define for_benchmark")

    def _build_figure(self, **values):
        raise NotImplementedError

    def _update_artists(self, **values) -> None:
        raise NotImplementedError

    @property
    def input_tokens(self) -> int | None:
        """How many tokens the explorer's input has (its trace's length), for the benchmark."""
        trace = getattr(self, "trace", None)
        return getattr(trace, "seq_len", None)

    def describe(self) -> str:
        """One line naming the explorer and its control values (the text/plain of its output)."""
        shown = ", ".join(f"{k}={v!r}" for k, v in self.values.items() if k in self.controls)
        return f"{type(self).__name__}({shown})" + ("" if not self.controls else " -- run the notebook to move the controls")

    def static_png(self) -> bytes:
        """The figure as the explorer shows it now, as PNG bytes."""
        return self.image.value

    EXPORT_DPI = 300  # print resolution of an exported PNG

    def caption_text(self) -> str:
        """The exported caption: which explorer and control values (:meth:`describe`), the figure's
        own texts (title, headings), then each panel's title and axis labels, one line each
        (repeats left out)."""
        def line(texts):
            return " \u00b7 ".join(dict.fromkeys(t.strip() for t in texts if t and t.strip()))

        suptitle = getattr(self.fig, "_suptitle", None)
        lines = [self.describe().split(" -- ")[0],
                 *(t.get_text().strip() for t in ([suptitle] if suptitle is not None else []) + self.fig.texts),
                 line(ax.get_title() for ax in self.fig.axes),
                 line(label for ax in self.fig.axes for label in (ax.get_xlabel(), ax.get_ylabel()))]
        return "\n".join(dict.fromkeys(t for t in lines if t)) + "\n"

    def export(self, name: str, directory=None, *, dpi: int | None = None, caption: str | None = None) -> dict:
        """Save the view the explorer shows now at print size: ``name.png`` (at ``dpi``, default
        :attr:`EXPORT_DPI`, rounded to a whole multiple of the figure's own dpi), ``name.svg``
        (vector) and ``name.txt`` (``caption`` if given, then :meth:`caption_text`), in
        ``directory`` (default ``exports/`` under the working folder). Both pictures keep the
        figure's size in inches, the width the course's pages are drawn for. Returns
        ``{"png": path, "svg": path, "txt": path}``."""
        from pathlib import Path

        if not isinstance(name, str) or not name.strip() or any(c in name for c in '/\\:*?"<>|'):
            raise ValueError(f"name must be a plain file name without a suffix (e.g. 'attention_head'), "
                             f"got {name!r}.")
        factor = max(1, round((dpi or self.EXPORT_DPI) / self.fig.dpi))
        folder = Path("exports" if directory is None else directory)
        folder.mkdir(parents=True, exist_ok=True)
        paths = {kind: folder / f"{name}.{kind}" for kind in ("png", "svg", "txt")}
        blitted = [a for a in getattr(self, "_blit_order", []) if a.get_animated()]
        images = [(im, im.get_array(), im.ox, im.oy) for im in self.fig.images]
        try:
            for artist in blitted:  # a normal draw leaves animated artists out
                artist.set_animated(False)
            with plt.rc_context({"savefig.bbox": "standard"}):  # the whole figure, as the explorer shows it
                self.fig.savefig(paths["svg"], format="svg")
            for im, data, ox, oy in images:  # pixel-placed images (label strips) scale with the dpi
                im.set_data(np.repeat(np.repeat(np.asarray(data), factor, axis=0), factor, axis=1))
                im.ox, im.oy = ox * factor, oy * factor
            with plt.rc_context({"savefig.bbox": "standard"}):
                self.fig.savefig(paths["png"], format="png", dpi=self.fig.dpi * factor)
        finally:
            for im, data, ox, oy in images:
                im.set_data(data)
                im.ox, im.oy = ox, oy
            for artist in blitted:
                artist.set_animated(True)
            self._background = None  # the next update draws the whole figure again
        paths["txt"].write_text((caption.strip() + "\n" if caption else "") + self.caption_text())
        return paths

    def export_button(self, name: str, directory=None, **options):
        """An ``ipywidgets.Button`` that calls :meth:`export` with these arguments when clicked (show it
        next to the explorer: ``display(explorer, explorer.export_button("name"))``)."""
        import ipywidgets as widgets

        button = widgets.Button(description="save PNG + SVG", tooltip=f"export('{name}')")
        button.on_click(lambda _: self.export(name, directory, **options))
        return button

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The live widget view, with a PNG of the current figure and a text line as fallbacks.

        Front ends that know widgets (JupyterLab, Notebook, Colab; ipywidgets 7 and 8) render
        the view; static viewers (nbconvert without widget state, GitHub, the website) pick the
        PNG. One output bundle, so nothing is shown twice.
        """
        widget_bundle = getattr(self.widget, "_repr_mimebundle_", None)
        view = widget_bundle().get(WIDGET_VIEW_MIMETYPE) if widget_bundle else None  # ipywidgets 8
        if view is None:  # ipywidgets 7 displays through _ipython_display_; the view is the model id
            view = {"version_major": 2, "version_minor": 0, "model_id": self.widget.model_id}
        data = {
            WIDGET_VIEW_MIMETYPE: view,
            "image/png": base64.b64encode(self.static_png()).decode("ascii"),
            "text/plain": self.describe(),
        }
        alt = f"Static picture of the {type(self).__name__} ({self.describe()}): run the notebook to explore."
        return data, {"image/png": {"alt": alt}}


# ------------------------------------------------------------------------------ the website
def _register_site_frames() -> None:
    """In the book build's kernels only (``COURSE_SITE_FRAMES`` set): show explorers with the
    frames the website moves through (:mod:`helpers.common.explorer_frames`)."""
    import os

    if os.environ.get("COURSE_SITE_FRAMES"):
        from helpers.common.explorer_frames import register

        register(Explorer)


_register_site_frames()
