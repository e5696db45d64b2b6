"""Explorers that move on the website, with no kernel: every state a reader would try, drawn
ahead of time from the explorer's cached results, as a few bytes each.

The website has no Python behind it, so an explorer's sliders cannot call
:meth:`~helpers.common.explorer.Explorer.update`. Instead, when the book build runs a lesson
(``book/build.py`` sets :data:`FRAMES_ENV` for its kernel), displaying an explorer also records

* its **background**: the figure with every artist an update changes hidden (what the explorer
  itself keeps as its blitting background), as a 2x PNG;
* its **frames**: for every combination of its discrete controls (:func:`site_grid`: sliders,
  drop-downs, check boxes; every layer x head of an attention view, every token x layer of a
  layer walk), the artists an update changes, as drawing instructions in the figure's pixels
  (:func:`artist_primitives`): a heat map as a tiny PNG of its cells, bars and lines as paths,
  titles as text. The same instruction in many frames is stored once;
* for an explorer whose input is free text (lesson 04's "type a sentence" box), which cannot be
  precomputed, ``explorer.site_multiples()``: one figure of a few example states side by side.

``book/postprocess.py`` puts these next to the explorer's picture, and ``book/static/
course-explorer.js`` (no dependencies, no network) draws a frame on a ``<canvas>`` over the
picture when a slider moves. The model never runs for a frame: each frame is one
``_update_artists`` call on the explorer's cached arrays, as a slider move in the notebook.

Nothing here runs in a learner's notebook: the formatter is registered only when
:data:`FRAMES_ENV` names a folder (:func:`register`).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import itertools
import json
import math
import os
from pathlib import Path

import numpy as np
from matplotlib.collections import Collection
from matplotlib.colors import to_rgba, to_rgba_array
from matplotlib.image import AxesImage, FigureImage
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.path import Path as MplPath
from matplotlib.text import Text

FRAMES_ENV = "COURSE_SITE_FRAMES"  # a folder: the book build's kernel writes one JSON per explorer there
SCALE = 2  # the website shows explorers as 2x pictures (sharp on a high-density screen, or enlarged)
MAX_FRAMES = 200  # states precomputed per explorer at most; controls past this stay where they are
MAX_BYTES = 150_000  # the frames of one explorer at most, as a page carries them (packed_size); fewer controls move otherwise
FORMAT = 1  # the JSON layout below; course-explorer.js checks it


# ------------------------------------------------------------------------------ controls
def control_values(control) -> list[tuple[str, object]] | None:
    """``[(label, value), ...]`` a control can take, or None for a free input (text, float).

    ipywidgets 7 and 8: an ``IntSlider`` gives every integer from ``min`` to ``max`` (by
    ``step``), a selection (``Dropdown``, ``ToggleButtons``, ...) its options, a ``Checkbox``
    False and True."""
    import ipywidgets as widgets

    if isinstance(control, (widgets.IntSlider, widgets.BoundedIntText)):
        step = max(1, int(getattr(control, "step", 1) or 1))
        return [(str(v), v) for v in range(int(control.min), int(control.max) + 1, step)]
    if isinstance(control, widgets.Checkbox):
        return [("off", False), ("on", True)]
    options = getattr(control, "options", None)
    if options is not None and not isinstance(control, widgets.Text):
        pairs = []
        for option in options:
            label, value = option if isinstance(option, tuple) and len(option) == 2 else (str(option), option)
            pairs.append((str(label), value))
        return pairs
    return None


def site_grid(explorer, max_frames: int = MAX_FRAMES) -> list[dict]:
    """The controls the website moves: ``[{"name", "label", "options": [(label, value)]}]``, in the
    explorer's order, as many as fit ``max_frames`` states together. A control that would take
    the count past it (a window slider over a long input, a token menu of 512 tokens) stays at
    its value, and :func:`explorer_frames` records it under ``"fixed"``."""
    grid, count = [], 1
    for name, control in explorer.controls.items():
        options = control_values(control)
        if not options or len(options) < 2 or count * len(options) > max_frames:
            continue
        grid.append({"name": name, "label": str(getattr(control, "description", "") or name), "options": options})
        count *= len(options)
    return grid


# ------------------------------------------------------------------------------ drawing instructions
def _num(v: float) -> float:
    return round(float(v), 2)


def _color(rgba) -> str | None:
    """``"#rrggbbaa"`` (or None when fully transparent)."""
    r, g, b, a = to_rgba(rgba)
    if a <= 0:
        return None
    return "#" + "".join(f"{int(round(c * 255)):02x}" for c in (r, g, b, a))


def path_data(path: MplPath, transform, height: float) -> str:
    """An SVG path string (``M x y L x y C ... Z``) of ``path`` in the figure's pixels, y downwards."""
    parts = []
    for vertices, code in path.iter_segments(transform, simplify=False, curves=True, remove_nans=True):
        xy = [f"{_num(x):g} {_num(height - y):g}" for x, y in vertices.reshape(-1, 2)]
        if code == MplPath.MOVETO:
            parts.append("M" + xy[0])
        elif code == MplPath.LINETO:
            parts.append("L" + xy[0])
        elif code == MplPath.CURVE3:
            parts.append("Q" + " ".join(xy))
        elif code == MplPath.CURVE4:
            parts.append("C" + " ".join(xy))
        elif code == MplPath.CLOSEPOLY:
            parts.append("Z")
    return "".join(parts)


def _clip(artist, height: float) -> list[float] | None:
    if not artist.get_clip_on():
        return None
    box = artist.get_clip_box()
    if box is None:
        return None
    return [_num(box.x0), _num(height - box.y1), _num(box.width), _num(box.height)]


_PNG_CACHE: dict[bytes, str] = {}


def _png(rgba: np.ndarray) -> str:
    """:func:`_encode_png`, once per distinct picture (a label strip is the same in every frame)."""
    rgba = np.ascontiguousarray(rgba, dtype=np.uint8)
    key = hashlib.sha1(rgba.tobytes() + str(rgba.shape).encode()).digest()
    if key not in _PNG_CACHE:
        if len(_PNG_CACHE) > 4096:
            _PNG_CACHE.clear()
        _PNG_CACHE[key] = _encode_png(rgba)
    return _PNG_CACHE[key]


def _encode_png(rgba: np.ndarray) -> str:
    """A small RGBA array as a ``data:`` PNG, lossless (an exact palette when it has at most 256 colours)."""
    from PIL import Image

    rgba = np.ascontiguousarray(rgba, dtype=np.uint8)
    colours, index = np.unique(rgba.reshape(-1, 4), axis=0, return_inverse=True)
    buffer = io.BytesIO()
    if len(colours) <= 256:  # an exact palette: every pixel keeps its colour
        image = Image.fromarray(index.reshape(rgba.shape[:2]).astype(np.uint8), "P")
        image.putpalette(colours[:, :3].ravel().tolist())
        extra = {} if (colours[:, 3] == 255).all() else {"transparency": bytes(colours[:, 3].tolist())}
        image.save(buffer, format="PNG", optimize=True, **extra)
    else:
        Image.fromarray(rgba, "RGBA").save(buffer, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _dashes(artist, dpi: float) -> list[float] | None:
    pattern = getattr(artist, "_dash_pattern", None)  # (offset, [on, off, ...]) in points, scaled by width
    if not pattern or not pattern[1]:
        return None
    return [_num(d * dpi / 72) for d in pattern[1]]


def _line_width(points: float, dpi: float) -> float:
    return _num(points * dpi / 72)


class Unsupported(Exception):
    """An artist this module cannot describe; :func:`artist_primitives` draws it as pixels instead."""


def _image(artist, height: float) -> dict:
    """An axes or figure image: its pixels at their own resolution, and where they go."""
    array = artist.get_array()
    if array is None:
        return {}
    rgba = artist.to_rgba(array, alpha=artist.get_alpha(), bytes=True)
    if rgba.ndim != 3:
        raise Unsupported("an image that is not 2-D")
    if isinstance(artist, FigureImage):
        h, w = rgba.shape[:2]
        x0, y0 = artist.ox, artist.oy
        if artist.origin != "upper":
            rgba = rgba[::-1]
        return {"t": "img", "src": _png(rgba), "box": [_num(x0), _num(height - y0 - h), w, h]}
    left, right, bottom, top = artist.get_extent()
    transform = artist.get_transform()
    (xa, ya), (xb, yb) = transform.transform([(left, bottom), (right, top)])
    # row 0 of the array lies at `top` (origin "upper") or `bottom` (origin "lower")
    row0_y = yb if artist.origin == "upper" else ya
    other_y = ya if artist.origin == "upper" else yb
    if row0_y < other_y:  # row 0 is lower on the screen than the last row
        rgba = rgba[::-1]
    if xa > xb:
        rgba = rgba[:, ::-1]
    x0, x1 = sorted((xa, xb))
    y0, y1 = sorted((ya, yb))
    prim = {"t": "img", "src": _png(rgba), "box": [_num(x0), _num(height - y1), _num(x1 - x0), _num(y1 - y0)]}
    if artist.get_interpolation() not in ("nearest", "none"):
        prim["smooth"] = True
    clip = _clip(artist, height)
    if clip:
        prim["clip"] = clip
    return prim


def _patch(artist, height: float, dpi: float) -> dict:
    d = path_data(artist.get_path(), artist.get_transform(), height)
    fill = _color(artist.get_facecolor()) if artist.get_fill() else None
    width = artist.get_linewidth()
    stroke = _color(artist.get_edgecolor()) if width > 0 else None
    if fill is None and stroke is None:
        return {}
    prim = {"t": "path", "d": d}
    if fill:
        prim["fill"] = fill
    if stroke:
        prim.update(stroke=stroke, lw=_line_width(width, dpi), join=artist.get_joinstyle(), cap=artist.get_capstyle())
        dash = _dashes(artist, dpi)
        if dash:
            prim["dash"] = dash
    clip = _clip(artist, height)
    if clip:
        prim["clip"] = clip
    return prim


def _line(artist: Line2D, height: float, dpi: float) -> list[dict]:
    out = []
    xy = artist.get_transform().transform(np.asarray(artist.get_xydata(), dtype=float))
    xy = xy[np.isfinite(xy).all(1)]
    clip = _clip(artist, height)
    color = _color(to_rgba(artist.get_color(), artist.get_alpha()))
    if artist.get_drawstyle() not in (None, "default"):
        raise Unsupported("a stepped line")
    if artist.get_linestyle() not in ("None", "", " ", "none") and len(xy) > 1 and color:
        prim = {"t": "path", "d": "M" + "L".join(f"{_num(x):g} {_num(height - y):g}" for x, y in xy),
                "stroke": color, "lw": _line_width(artist.get_linewidth(), dpi),
                "join": artist.get_solid_joinstyle() if not _dashes(artist, dpi) else artist.get_dash_joinstyle(),
                "cap": artist.get_solid_capstyle() if not _dashes(artist, dpi) else artist.get_dash_capstyle()}
        dash = _dashes(artist, dpi)
        if dash:
            prim["dash"] = dash
        if clip:
            prim["clip"] = clip
        out.append(prim)
    marker = artist._marker
    if marker.get_marker() not in (None, "None", "", " ", "none") and len(xy):
        every = artist.get_markevery()
        if every is not None:
            raise Unsupported("markevery")
        size = artist.get_markersize() * dpi / 72
        transform = marker.get_transform().frozen().scale(size)
        d = path_data(marker.get_path(), transform, 0.0)  # y flipped around 0
        edge = _color(to_rgba(artist.get_markeredgecolor(), artist.get_alpha()))
        face = _color(to_rgba(artist.get_markerfacecolor(), artist.get_alpha())) if marker.is_filled() else None
        prim = {"t": "marks", "d": d, "at": [[_num(x), _num(height - y)] for x, y in xy]}
        if face:
            prim["fill"] = face
        mew = artist.get_markeredgewidth()
        if edge and mew > 0:
            prim.update(stroke=edge, lw=_line_width(mew, dpi),
                        join=marker.get_joinstyle(), cap=marker.get_capstyle())
        if clip:
            prim["clip"] = clip
        out.append(prim)
    return out


def _colors(values) -> object:
    """Per-item colours, compactly: one ``"#rrggbbaa"`` for all, ``{"rgb": "#rrggbb", "a": "hex"}``
    when only the opacity varies, or a list."""
    values = to_rgba_array(values) if len(values) else np.zeros((0, 4))
    if len(values) == 0:
        return None
    if len(values) == 1 or np.all(values == values[0]):
        return _color(values[0]) or "#00000000"
    if np.all(values[:, :3] == values[0, :3]):
        return {"rgb": (_color((*values[0, :3], 1.0)) or "#000000ff")[:7],
                "a": "".join(f"{int(round(a * 255)):02x}" for a in values[:, 3])}
    return [(_color(v) or "#00000000") for v in values]


def _collection(artist: Collection, height: float, dpi: float) -> dict:
    if len(artist.get_transforms()) or (np.asarray(artist.get_offsets()) != 0).any():
        raise Unsupported("a collection with offsets or per-item transforms (a scatter)")
    transform = artist.get_transform()
    paths = [path_data(p, transform, height) for p in artist.get_paths()]
    if not paths:
        return {}
    prim = {"t": "coll", "d": paths}
    faces, edges = artist.get_facecolor(), artist.get_edgecolor()
    if len(faces):
        prim["fill"] = _colors(faces)
    widths = np.asarray(artist.get_linewidth(), dtype=float).ravel()
    if len(edges) and widths.max(initial=0) > 0:
        prim["stroke"] = _colors(edges)
        prim["lw"] = [_line_width(w, dpi) for w in widths] if len(set(widths)) > 1 else _line_width(widths[0], dpi)
        prim["cap"] = artist.get_capstyle() or "butt"
        prim["join"] = artist.get_joinstyle() or "round"
    clip = _clip(artist, height)
    if clip:
        prim["clip"] = clip
    return prim


def _font_family(artist: Text) -> str:
    from matplotlib.font_manager import findfont, get_font

    try:
        return get_font(findfont(artist.get_fontproperties())).family_name
    except Exception:  # noqa: BLE001 - a family name is only a preference for the browser
        return "DejaVu Sans"


def _text(artist: Text, height: float, dpi: float, renderer) -> dict:
    text = artist.get_text()
    if not text.strip():
        return {}
    if artist.get_usetex() or any(artist._preprocess_math(line)[1] for line in text.split("\n")):
        raise Unsupported("maths in a text")
    if artist.get_bbox_patch() is not None:
        raise Unsupported("a text with a box")
    color = _color(to_rgba(artist.get_color(), artist.get_alpha()))
    if color is None:
        return {}
    _, info, _ = artist._get_layout(renderer)  # each line: (text, (width, height), x, y) of its baseline start
    x0, y0 = artist.get_transform().transform(artist.get_unitless_position())
    angle = artist.get_rotation()
    align = getattr(artist, "_multialignment", None) or artist.get_horizontalalignment()
    align = {"center": "center", "right": "right"}.get(align, "left")
    cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    lines = []
    for item in info:  # (line, (w, h), x, y) before matplotlib 3.10, (line, (w, a, d), (x, y)) since
        line, w = item[0], item[1][0]
        x, y = item[2] if len(item) == 3 else item[2:4]
        if not line:
            continue
        # anchor the line where its alignment puts it, so another font keeps the alignment
        shift = {"left": 0.0, "center": w / 2, "right": w}[align]
        ax, ay = x0 + x + shift * cos, y0 + y + shift * sin
        lines.append([line, _num(ax), _num(height - ay)])
    size = artist.get_fontsize() * dpi / 72
    weight = artist.get_fontweight()
    weight = "bold" if (weight in ("bold", "heavy", "black", "semibold", "demibold", "extra bold")
                        or (isinstance(weight, (int, float)) and weight >= 600)) else "normal"
    prim = {"t": "text", "lines": lines, "size": _num(size), "color": color, "align": align,
            "font": _font_family(artist)}
    if angle:
        prim["rot"] = _num(angle)
    if weight != "normal":
        prim["weight"] = weight
    if artist.get_fontstyle() != "normal":
        prim["style"] = artist.get_fontstyle()
    clip = _clip(artist, height)
    if clip:
        prim["clip"] = clip
    return prim


def artist_primitives(artist, fig, renderer) -> list[dict]:
    """Drawing instructions for one artist as it is now, in the figure's pixels (y downwards).

    Raises :class:`Unsupported` for an artist it cannot describe."""
    if not artist.get_visible():
        return []
    height, dpi = fig.bbox.height, fig.dpi
    if isinstance(artist, (AxesImage, FigureImage)):
        prim = _image(artist, height)
    elif isinstance(artist, Line2D):
        return _line(artist, height, dpi)
    elif isinstance(artist, Patch):
        prim = _patch(artist, height, dpi)
    elif isinstance(artist, Collection):
        prim = _collection(artist, height, dpi)
    elif isinstance(artist, Text):
        prim = _text(artist, height, dpi, renderer)
    else:
        raise Unsupported(type(artist).__name__)
    return [prim] if prim else []


def _pixels_of(explorer, artist) -> list[dict]:
    """An artist drawn as pixels (the fallback): the explorer's background with only ``artist``
    drawn over it, cut to the artist's extent."""
    canvas = explorer.fig.canvas
    renderer = canvas.get_renderer()
    box = artist.get_window_extent(renderer).expanded(1.0, 1.0).padded(2)
    box = box.intersection(box, explorer.fig.bbox) or box
    canvas.restore_region(explorer._background)
    explorer.fig.draw_artist(artist)
    pixels = np.asarray(canvas.buffer_rgba())
    height = pixels.shape[0]
    x0, x1 = max(0, int(box.x0)), min(pixels.shape[1], int(math.ceil(box.x1)))
    y0, y1 = max(0, int(height - box.y1)), min(height, int(math.ceil(height - box.y0)))
    if x1 <= x0 or y1 <= y0:
        return []
    return [{"t": "img", "src": _png(pixels[y0:y1, x0:x1]), "box": [x0, y0, x1 - x0, y1 - y0], "smooth": True}]


# ------------------------------------------------------------------------------ pictures
def scaled_png(fig, scale: int = SCALE, hide=()) -> bytes:
    """The figure as PNG at ``scale`` times its dpi, with ``hide`` left out. Figure images
    (pixel-placed label strips) are enlarged with it, so they stay where they belong."""
    shown = [(a, a.get_visible()) for a in hide]
    images = [(im, im.get_array(), im.ox, im.oy) for im in fig.images]
    # an explorer's blitted artists stay animated after it recorded its frames, and savefig
    # leaves animated artists out (label strips, the title): draw them like any other
    animated = fig.findobj(lambda a: a.get_animated())
    try:
        for artist in animated:
            artist.set_animated(False)
        for artist, _ in shown:
            artist.set_visible(False)
        for im, array, ox, oy in images:
            if scale != 1 and array is not None:
                im.set_data(np.repeat(np.repeat(np.asarray(array), scale, 0), scale, 1))
                im.ox, im.oy = ox * scale, oy * scale
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=fig.dpi * scale)
        return buffer.getvalue()
    finally:
        for artist, visible in shown:
            artist.set_visible(visible)
        for artist in animated:
            artist.set_animated(True)
        for im, array, ox, oy in images:
            if array is not None:
                im.set_data(array)
            im.ox, im.oy = ox, oy


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


# ------------------------------------------------------------------------------ frames
def explorer_frames(explorer, max_frames: int = MAX_FRAMES, max_bytes: int = MAX_BYTES,
                    scale: int = SCALE) -> dict:
    """Everything the website needs to move ``explorer`` without a kernel (see the module
    docstring), as a JSON-ready dict. The explorer ends where it started (its values, controls
    and picture)."""
    start = dict(explorer.values)
    grid = site_grid(explorer, max_frames)
    while True:
        data = _frames_for(explorer, grid, scale)
        size = packed_size(data)
        if size <= max_bytes or not grid:
            break
        grid = grid[:-1]  # too heavy for a page: the last control stays where it is
    explorer.values.update(start)
    explorer._update_artists(**explorer.values)
    explorer._static_changed()  # the next render draws everything once (a fresh background)
    explorer.image.value = explorer._render()
    data["bytes"] = size
    return data


def packed_size(data: dict) -> int:
    """Bytes the frames add to a page: their JSON, background left out (a picture of its own),
    gzip-compressed and in base64, as ``book/postprocess.py`` writes them."""
    rest = {k: v for k, v in data.items() if k != "background"}
    return math.ceil(len(gzip.compress(json.dumps(rest, separators=(",", ":")).encode("utf-8"), 9)) / 3) * 4


def _frames_for(explorer, grid: list[dict], scale: int) -> dict:
    fig = explorer.fig
    start = dict(explorer.values)
    explorer._render()  # a background and a blitting order exist
    order = list(explorer._blit_order) if getattr(explorer, "_blit_order", None) else []
    renderer = fig.canvas.get_renderer()
    table: dict[str, int] = {}
    prims: list[dict] = []
    frames: list[list[int]] = []
    fallback: set[str] = set()
    shapes: dict[str, int] = {}
    geometry: list[list[str]] = []
    moved = [g["name"] for g in grid]
    for combo in itertools.product(*[range(len(g["options"])) for g in grid]):
        values = {**start, **{g["name"]: g["options"][i][1] for g, i in zip(grid, combo)}}
        explorer.values.update(values)
        explorer._update_artists(**explorer.values)
        if explorer._background is None:  # the update changed a static part (an axis limit)
            raise ValueError(f"{type(explorer).__name__}: a control move changes the figure's static part; "
                             "its states cannot be drawn over one background")
        frame = []
        for artist in order:
            try:
                drawn = artist_primitives(artist, fig, renderer)
            except Unsupported as why:
                fallback.add(f"{type(artist).__name__}: {why}")
                drawn = _pixels_of(explorer, artist)
            for prim in drawn:
                if prim["t"] == "coll":  # a collection's paths are often the same in every frame: stored once
                    shape = json.dumps(prim.pop("d"), separators=(",", ":"))
                    if shape not in shapes:
                        shapes[shape] = len(geometry)
                        geometry.append(json.loads(shape))
                    prim["g"] = shapes[shape]
                key = json.dumps(prim, sort_keys=True, separators=(",", ":"))
                if key not in table:
                    table[key] = len(prims)
                    prims.append(prim)
                frame.append(table[key])
        frames.append(frame)
    explorer.values.update(start)
    explorer._update_artists(**explorer.values)
    background = scaled_png(fig, scale, hide=order)
    # the canvas takes the picture's own pixel size (a PNG's IHDR: width, height at bytes 16-24), which
    # savefig rounds, where get_width_height() truncates: 1 px apart at some figure sizes
    width, height = (int.from_bytes(background[i:i + 4], "big") / scale for i in (16, 20))
    return {
        "format": FORMAT,
        "kind": "frames",
        "explorer": type(explorer).__name__,
        "size": [width, height],
        "scale": scale,
        "background": _data_uri(background),
        "controls": [{"name": g["name"], "label": g["label"], "labels": [o[0] for o in g["options"]],
                      "value": next((i for i, o in enumerate(g["options"]) if o[1] == start.get(g["name"])), 0)}
                     for g in grid],
        "fixed": {name: _plain(value) for name, value in start.items() if name not in moved},
        "still": [str(getattr(c, "description", "") or n) for n, c in explorer.controls.items() if n not in moved],
        "prims": prims,
        "geometry": geometry,
        "frames": frames,
        "pixels": sorted(fallback),
        # the sentence it shows: the website's "try your own sentence" box opens with it (issue 50),
        # and what else the browser needs to redraw it for the reader's sentence (a baseline)
        "text": getattr(getattr(explorer, "trace", None), "text", None),
        "browser": explorer.site_browser() if callable(getattr(explorer, "site_browser", None)) else None,
    }


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)


# ------------------------------------------------------------------------------ the kernel side
def site_bundle(explorer, include=None, exclude=None):
    """The explorer's output bundle for the book build: its usual bundle, the picture at
    :data:`SCALE` x (shown at its own size: width and height in the metadata), and, in the
    folder :data:`FRAMES_ENV` names, ``<sha256 of that picture>.json`` with its frames (or,
    for an explorer with ``site_multiples()``, the picture is that figure instead)."""
    data, metadata = explorer._repr_mimebundle_(include, exclude)
    folder = os.environ.get(FRAMES_ENV)
    if not folder:
        return data, metadata
    multiples = getattr(explorer, "site_multiples", None)
    record: dict
    if callable(multiples):
        import matplotlib.pyplot as plt

        fig, note = multiples()
        png = scaled_png(fig, SCALE)
        width, height = fig.canvas.get_width_height()
        from helpers.common.style import figure_description

        alt = figure_description(fig)
        plt.close(fig)
        record = {"format": FORMAT, "kind": "multiples", "explorer": type(explorer).__name__, "note": note}
        if callable(getattr(explorer, "site_browser", None)):  # what the reader's browser needs (issue 50)
            record["browser"] = explorer.site_browser()
    else:
        from helpers.common.style import figure_description

        record = explorer_frames(explorer)
        png = scaled_png(explorer.fig, SCALE)
        width, height = explorer.fig.canvas.get_width_height()
        moved = ", ".join(c["label"] for c in record["controls"]) or "no control"
        alt = (f"Explorer ({moved} on sliders), first state: "
               f"{figure_description(explorer.fig).removeprefix('Figure: ')}")
    data = {**data, "image/png": base64.b64encode(png).decode("ascii")}
    metadata = {**metadata, "image/png": {**metadata.get("image/png", {}), "alt": alt,
                                          "width": width, "height": height}}
    Path(folder).mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(png).hexdigest()
    (Path(folder) / f"{name}.json").write_text(json.dumps(record, separators=(",", ":")), encoding="utf-8")
    return data, metadata


def register(explorer_class=None) -> bool:
    """Show every explorer (every instance of ``explorer_class``, by default
    :class:`helpers.common.explorer.Explorer`, which passes itself) through :func:`site_bundle`
    in this IPython kernel, when :data:`FRAMES_ENV` is set (the book build). Returns whether it did."""
    if not os.environ.get(FRAMES_ENV):
        return False
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    if explorer_class is None:  # the explorer module imports this one, never the other way round
        raise ValueError("register needs the Explorer class: helpers.common.explorer calls register(Explorer).")
    shell.display_formatter.mimebundle_formatter.for_type(explorer_class, site_bundle)
    return True


# Kept for readers of the JSON: what a primitive is.
PRIMITIVES = {
    "img": "a picture: src (data: PNG), box [x, y, width, height]; smooth: interpolate when scaled",
    "path": "an SVG path d, filled (fill) and/or stroked (stroke, lw, dash, join, cap)",
    "marks": "one marker path d (around 0, 0) drawn at every point of at",
    "coll": "many paths (geometry[g]), with fill/stroke colours (one, per item, or one colour with per-item opacity)",
    "text": "lines [[text, x, y]] at their baselines, size (px), color, align, font, rot (degrees), weight",
}
