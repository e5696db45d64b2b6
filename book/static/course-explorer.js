/* Explorers that move without a kernel (book/postprocess.py puts them on the page; the frames
   come from helpers/common/explorer_frames.py when the book build ran the lesson).

   Each <div class="course-explorer"> holds the explorer's picture (an <img>, what a reader
   without JavaScript sees) and a <script type="application/json"> with its frames: a
   background picture (the figure without the parts a control changes) and, for every
   combination of its controls, drawing instructions for those parts. This script adds one
   range slider per control and, when one moves, draws that frame on a <canvas> laid over the
   picture. No dependencies, no network, works from file://. */
(function () {
  'use strict';
  var FORMAT = 1;

  function rgba(hex) {
    if (!hex) return null;
    var a = hex.length > 7 ? parseInt(hex.slice(7, 9), 16) / 255 : 1;
    return 'rgba(' + parseInt(hex.slice(1, 3), 16) + ',' + parseInt(hex.slice(3, 5), 16) + ',' +
      parseInt(hex.slice(5, 7), 16) + ',' + a.toFixed(3) + ')';
  }

  /* Per-item colours: one "#rrggbbaa", {rgb, a: two hex digits per item}, or a list. */
  function colourAt(spec, i) {
    if (spec == null) return null;
    if (typeof spec === 'string') return rgba(spec);
    if (Array.isArray(spec)) return rgba(spec[i % spec.length]);
    var n = spec.a.length / 2, k = i % n;
    var a = parseInt(spec.a.slice(2 * k, 2 * k + 2), 16);
    return a === 0 ? null : rgba(spec.rgb + spec.a.slice(2 * k, 2 * k + 2));
  }

  function clip(ctx, box) {
    if (!box) return;
    ctx.beginPath();
    ctx.rect(box[0], box[1], box[2], box[3]);
    ctx.clip();
  }

  function stroke(ctx, prim, colour, width) {
    ctx.strokeStyle = colour;
    ctx.lineWidth = width;
    ctx.lineJoin = prim.join === 'round' ? 'round' : prim.join === 'bevel' ? 'bevel' : 'miter';
    ctx.lineCap = prim.cap === 'round' ? 'round' : prim.cap === 'projecting' ? 'square' : 'butt';
    ctx.setLineDash(prim.dash || []);
  }

  var draw = {
    img: function (ctx, prim, images) {
      var image = images[prim.src];
      if (!image || image.complete === false) return;  // a picture still loading (a canvas is always ready)
      ctx.imageSmoothingEnabled = !!prim.smooth;
      ctx.drawImage(image, prim.box[0], prim.box[1], prim.box[2], prim.box[3]);
    },
    path: function (ctx, prim) {
      var path = new Path2D(prim.d);
      if (prim.fill) { ctx.fillStyle = rgba(prim.fill); ctx.fill(path); }
      if (prim.stroke) { stroke(ctx, prim, rgba(prim.stroke), prim.lw); ctx.stroke(path); }
    },
    marks: function (ctx, prim) {
      var path = new Path2D(prim.d);
      prim.at.forEach(function (p) {
        ctx.save();
        ctx.translate(p[0], p[1]);
        if (prim.fill) { ctx.fillStyle = rgba(prim.fill); ctx.fill(path); }
        if (prim.stroke) { stroke(ctx, prim, rgba(prim.stroke), prim.lw); ctx.stroke(path); }
        ctx.restore();
      });
    },
    coll: function (ctx, prim, images, geometry) {
      geometry[prim.g].forEach(function (d, i) {
        var path = new Path2D(d);
        var fill = colourAt(prim.fill, i), line = colourAt(prim.stroke, i);
        if (fill) { ctx.fillStyle = fill; ctx.fill(path); }
        if (line) {
          var width = Array.isArray(prim.lw) ? prim.lw[i % prim.lw.length] : prim.lw;
          if (width > 0) { stroke(ctx, prim, line, width); ctx.stroke(path); }
        }
      });
    },
    text: function (ctx, prim) {
      ctx.fillStyle = rgba(prim.color);
      ctx.font = (prim.style && prim.style !== 'normal' ? prim.style + ' ' : '') + (prim.weight || 'normal') + ' ' +
        prim.size + 'px "' + prim.font + '", "DejaVu Sans", "Bitstream Vera Sans", Verdana, Arial, sans-serif';
      ctx.textAlign = prim.align;
      ctx.textBaseline = 'alphabetic';
      prim.lines.forEach(function (line) {
        ctx.save();
        ctx.translate(line[1], line[2]);
        if (prim.rot) ctx.rotate(-prim.rot * Math.PI / 180);
        ctx.fillText(line[0], 0, 0);
        ctx.restore();
      });
    }
  };

  /* The frames as the page carries them: JSON, or gzip-compressed JSON in base64
     (data-encoding="gzip-base64"; DecompressionStream, in every current browser). */
  function readFrames(script) {
    var text = script.textContent.trim();
    if (script.getAttribute('data-encoding') !== 'gzip-base64') return Promise.resolve(JSON.parse(text));
    if (typeof DecompressionStream === 'undefined') return Promise.reject(new Error('no DecompressionStream'));
    var bytes = Uint8Array.from(atob(text), function (c) { return c.charCodeAt(0); });
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text().then(JSON.parse);
  }

  function Explorer(root, data) {
    if (data.format !== FORMAT || data.kind !== 'frames') throw new Error('unknown frames format');
    this.root = root;
    this.data = data;
    this.picture = root.querySelector('img');
    this.index = data.controls.map(function (c) { return c.value; });
    this.start = this.index.slice();
    this.images = {};
    var self = this;
    data.prims.forEach(function (p) {
      if (p.t === 'img' && !self.images[p.src]) {
        var image = new Image();
        image.onload = function () { if (self.shown) self.draw(); };
        image.src = p.src;
        self.images[p.src] = image;
      }
    });
    this.background = root.querySelector('img.course-explorer-background');
    if (!this.background && data.background) {  // not extracted to a file: the frames carry it
      this.background = new Image();
      this.background.onload = function () { if (self.shown) self.draw(); };
      this.background.src = data.background;
    } else if (this.background) {
      this.background.addEventListener('load', function () { if (self.shown) self.draw(); });
    }
    this.build();
  }

  Explorer.count = 0;  // slider ids, unique on the page

  Explorer.prototype.build = function () {
    var self = this, data = this.data;
    var controls = document.createElement('div');
    controls.className = 'course-explorer-controls';
    data.controls.forEach(function (control, k) {
      // one control: its name (a <label> for the slider), a step back, the slider, a step on, the value
      var row = document.createElement('span');
      row.className = 'course-explorer-control';
      var input = document.createElement('input');
      input.type = 'range';
      input.id = 'course-explorer-' + (++Explorer.count);
      input.min = 0;
      input.max = control.labels.length - 1;
      input.step = 1;
      input.value = self.index[k];
      input.setAttribute('aria-label', control.label);
      input.setAttribute('aria-valuetext', control.labels[self.index[k]]);
      var name = document.createElement('label');
      name.className = 'course-explorer-name';
      name.htmlFor = input.id;
      name.textContent = control.label;
      var value = document.createElement('output');
      value.className = 'course-explorer-value';
      value.textContent = control.labels[self.index[k]];
      input.addEventListener('input', function () {
        self.index[k] = +input.value;
        value.textContent = control.labels[self.index[k]];
        input.setAttribute('aria-valuetext', value.textContent);
        self.show();
      });
      // a step at a time: a phone's slider gives a few pixels per step
      function stepper(delta, text, what) {
        var button = document.createElement('button');
        button.type = 'button';
        button.className = 'course-explorer-step';
        button.textContent = text;
        button.setAttribute('aria-label', what + ' ' + control.label);
        button.addEventListener('click', function () {
          var v = Math.min(+input.max, Math.max(0, +input.value + delta));
          if (v !== +input.value) {
            input.value = v;
            input.dispatchEvent(new Event('input'));
          }
        });
        return button;
      }
      row.appendChild(name);
      row.appendChild(stepper(-1, '\u2212', 'previous'));
      row.appendChild(input);
      row.appendChild(stepper(1, '+', 'next'));
      row.appendChild(value);
      controls.appendChild(row);
    });
    controls.appendChild(this.fullSizeButton());
    var stage = this.root.querySelector('.course-explorer-stage');
    this.root.insertBefore(controls, stage);
    var canvas = document.createElement('canvas');
    canvas.width = data.size[0] * data.scale;
    canvas.height = data.size[1] * data.scale;
    canvas.className = 'course-explorer-canvas';
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', this.picture ? this.picture.alt : data.explorer);
    stage.appendChild(canvas);
    this.canvas = canvas;
    this.shown = false;
  };

  /* On a narrow screen (the button shows there only, course.css) the picture is shrunk to the
     column and its text to 6-7 px: "Full size" lays the explorer over the page at the picture's
     own size, its text as on a laptop, scrolling sideways, the sliders on top and still working.
     The same button (or Escape) closes it. Nothing but this element changes. */
  Explorer.prototype.fullSizeButton = function () {
    var self = this, root = this.root;
    var button = document.createElement('button');
    button.type = 'button';
    button.className = 'course-explorer-full';
    var holder = null;  // keeps the page's length while the explorer is lifted out of it
    function set(open) {
      if (open === root.classList.contains('course-explorer-open')) return;
      if (open) {
        holder = document.createElement('div');
        holder.className = 'course-explorer-holder';
        holder.style.height = root.offsetHeight + 'px';
        root.parentNode.insertBefore(holder, root);
      } else if (holder) {
        holder.remove();
        holder = null;
      }
      root.classList.toggle('course-explorer-open', open);
      document.documentElement.classList.toggle('course-explorer-locked', open);
      label(open);
      if (open) root.scrollTop = root.scrollLeft = 0;
      hint.hidden = !(open && root.scrollWidth > root.clientWidth + 1);
      button.focus();
    }
    function label(open) {
      button.textContent = open ? '\u2715 Close' : '\u2922 Full size';
      button.setAttribute('aria-expanded', String(open));
      button.setAttribute('aria-label', open ? 'close the full-size explorer' : 'show the explorer at full size');
      if (open) root.setAttribute('aria-modal', 'true'); else root.removeAttribute('aria-modal');
      root.setAttribute('role', open ? 'dialog' : 'group');
      root.setAttribute('aria-label', open ? 'explorer at full size' : 'explorer');
    }
    var hint = document.createElement('span');
    hint.className = 'course-explorer-hint';
    hint.textContent = 'wider than the screen: scroll sideways \u2194';
    hint.hidden = true;
    label(false);
    button.addEventListener('click', function () { set(!root.classList.contains('course-explorer-open')); });
    root.addEventListener('keydown', function (event) {
      if (!root.classList.contains('course-explorer-open')) return;
      if (event.key === 'Escape') {
        event.preventDefault();
        set(false);
      } else if (event.key === 'Tab') {  // the keyboard stays in the explorer while it covers the page
        var stops = Array.prototype.filter.call(root.querySelectorAll('button, input'), function (e) {
          return !e.disabled && e.offsetParent !== null;
        });
        var at = stops.indexOf(document.activeElement);
        if (event.shiftKey ? at <= 0 : at === stops.length - 1) {
          event.preventDefault();
          stops[event.shiftKey ? stops.length - 1 : 0].focus();
        }
      }
    });
    this.fullSize = set;
    var both = document.createElement('span');
    both.className = 'course-explorer-full-row';
    both.appendChild(button);
    both.appendChild(hint);
    return both;
  };

  Explorer.prototype.frame = function () {
    var k = 0, controls = this.data.controls;
    for (var i = 0; i < controls.length; i++) k = k * controls[i].labels.length + this.index[i];
    return this.data.frames[k];
  };

  Explorer.prototype.show = function () {
    var same = this.index.every(function (v, i) { return v === this.start[i]; }, this);
    // the state the page opened with is the picture itself (drawn by matplotlib); any other is drawn here
    this.shown = !same || !!this.data.live;  // live: no picture under it (the reader's own sentence)
    this.root.classList.toggle('course-explorer-moved', this.shown);
    if (this.shown) this.draw();
  };

  Explorer.prototype.draw = function () {
    var ctx = this.canvas.getContext('2d'), data = this.data, self = this;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    if (this.background && this.background.complete && this.background.naturalWidth) {
      ctx.imageSmoothingEnabled = true;
      ctx.drawImage(this.background, 0, 0, this.canvas.width, this.canvas.height);
    }
    ctx.scale(data.scale, data.scale);
    this.frame().forEach(function (id) {
      var prim = data.prims[id];
      ctx.save();
      clip(ctx, prim.clip);
      draw[prim.t](ctx, prim, self.images, data.geometry);
      ctx.restore();
    });
    this.root.setAttribute('data-frame', this.index.join(','));
  };

  function start() {
    document.querySelectorAll('div.course-explorer').forEach(function (root) {
      if (root.courseExplorer) return;
      root.courseExplorer = readFrames(root.querySelector('script.course-frames')).then(function (data) {
        var explorer = new Explorer(root, data);
        root.setAttribute('data-ready', '1');
        return explorer;
      }).catch(function (err) {
        // the picture stays, without controls: what a reader without JavaScript sees
        root.setAttribute('data-error', String(err));
        if (window.console) console.warn('course-explorer:', err);
      });
    });
  }
  if (document.readyState !== 'loading') start();
  else document.addEventListener('DOMContentLoaded', start);
  // course-browser-model.js draws the reader's own sentence with the same renderer
  window.courseExplorers = { start: start, Explorer: Explorer };
})();
