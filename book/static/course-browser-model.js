/* "Try your own sentence": the course's model runs in the reader's browser, and an explorer
   redraws for the reader's sentence with the same renderer as its precomputed frames
   (course-explorer.js).

   book/browser_model.py exported, when the site was built, the model the lessons use to ONNX
   (fp32, the same weights as the notebook's PyTorch model; every hidden state and every attention
   map as outputs), with its vocabulary (model.json, for course-wordpiece.js) and ONNX Runtime Web
   (WebAssembly), all in _static/browser-model/. Nothing of it loads until the reader presses the
   button; then it downloads once (a progress bar gives the size) and the browser keeps it (the
   Cache API where the page is served over http(s), else the HTTP cache). A browser without
   WebAssembly, or a page opened from file:// (which a browser does not let load a model), keeps
   the precomputed explorer and says why. tests/test_browser_model.py checks the browser's token
   ids, hidden states and attention maps against PyTorch's. No network beyond the site itself. */
(function () {
  'use strict';
  var script = document.currentScript;
  var BASE = script ? script.src.replace(/[^/]*$/, '') + 'browser-model/' : '_static/browser-model/';
  var CACHE = 'course-browser-model-v1';
  var state = { loading: null, timings: {} };

  function mb(bytes) { return (bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0) + ' MB'; }

  /* Why this browser cannot run the model here, or null. */
  function unavailable() {
    if (typeof WebAssembly !== 'object' || typeof WebAssembly.instantiate !== 'function')
      return 'this browser has no WebAssembly (or it is turned off), which the model needs to run here';
    if (location.protocol === 'file:')
      return 'the page was opened from a file (file://), and a browser does not let such a page load the model; ' +
        'serve the site folder (for example `python -m http.server` in build/site) and open it at http://localhost:8000';
    if (typeof BigInt64Array === 'undefined') return 'this browser is too old (no BigInt64Array)';
    return null;
  }

  /* The bytes at url, from the Cache API when an earlier visit stored them; progress(done, total). */
  function download(url, total, progress) {
    var cache = null;
    var opened = (typeof caches !== 'undefined' && window.isSecureContext)
      ? caches.open(CACHE).then(function (c) { cache = c; return c.match(url); }).catch(function () { return null; })
      : Promise.resolve(null);
    return opened.then(function (hit) {
      if (hit) return hit.arrayBuffer().then(function (b) { progress(b.byteLength, b.byteLength); return b; });
      return fetch(url).then(function (response) {
        if (!response.ok) throw new Error(url + ': HTTP ' + response.status);
        var size = +response.headers.get('Content-Length') || total, done = 0, reader = response.body.getReader();
        var buffer = new Uint8Array(size), extra = [];
        function pump() {
          return reader.read().then(function (r) {
            if (r.done) return;
            if (done + r.value.length <= buffer.length) buffer.set(r.value, done);
            else extra.push(r.value);
            done += r.value.length;
            progress(done, size);
            return pump();
          });
        }
        return pump().then(function () {
          var bytes = done === buffer.length && !extra.length ? buffer : null;
          if (!bytes) {  // the size was not known ahead: glue the pieces together
            bytes = new Uint8Array(done);
            bytes.set(buffer.subarray(0, Math.min(done, buffer.length)));
            var at = buffer.length;
            extra.forEach(function (part) { bytes.set(part, at); at += part.length; });
          }
          if (cache) cache.put(url, new Response(bytes.slice())).catch(function () {});
          return bytes.buffer;
        });
      });
    });
  }

  /* Runtime, model and tokenizer, once per page: {ort, session, info, tokenizer}. */
  function load(progress) {
    if (state.loading) return state.loading;
    var why = unavailable();
    if (why) return Promise.reject(new Error(why));
    progress = progress || function () {};
    var t0 = performance.now(), info;
    state.loading = fetch(BASE + 'model.json').then(function (r) {
      if (!r.ok) throw new Error('model.json: HTTP ' + r.status);
      return r.json();
    }).then(function (data) {
      info = data;
      var sizes = [info.runtime.bytes, info.onnx.bytes], done = [0, 0], total = sizes[0] + sizes[1];
      function report(k) { return function (d) { done[k] = d; progress(done[0] + done[1], total); }; }
      var wasm = info.runtime.files.filter(function (f) { return /\.wasm$/.test(f); })[0];
      var module = info.runtime.files.filter(function (f) { return /\.mjs$/.test(f); })[0];
      return Promise.all([
        import(BASE + module),
        // versioned addresses: a rebuilt site with other weights is not answered from the cache
        download(BASE + wasm + '?v=' + encodeURIComponent(info.runtime.package), info.runtime.bytes, report(0)),
        download(BASE + info.onnx.file + '?v=' + info.onnx.sha256.slice(0, 16), info.onnx.bytes, report(1))
      ]);
    }).then(function (parts) {
      state.timings.downloadMs = performance.now() - t0;
      var ort = parts[0].default && parts[0].default.InferenceSession ? parts[0].default : parts[0];
      ort.env.wasm.wasmBinary = parts[1];
      ort.env.wasm.numThreads = self.crossOriginIsolated ? Math.min(4, navigator.hardwareConcurrency || 1) : 1;
      ort.env.wasm.proxy = false;
      var t1 = performance.now();
      return ort.InferenceSession.create(new Uint8Array(parts[2]), { executionProviders: ['wasm'] })
        .then(function (session) {
          state.timings.sessionMs = performance.now() - t1;
          return { ort: ort, session: session, info: info, tokenizer: new window.courseWordPiece.Tokenizer(info.tokenizer) };
        });
    });
    state.loading.catch(function () { state.loading = null; });  // a failed load may be tried again
    return state.loading;
  }

  /* One sentence through the model: {tokens, ids, dropped, total, n, layers, heads, hidden,
     hiddenStates: Float32Array [L+1, n, d], attentions: Float32Array [L, heads, n, n], ms}. */
  function run(text, progress) {
    return load(progress).then(function (m) {
      var enc = m.tokenizer.encode(text, m.info.max_length), n = enc.ids.length;
      var ids = new BigInt64Array(n), types = new BigInt64Array(n);
      enc.ids.forEach(function (id, i) { ids[i] = BigInt(id); });
      var t0 = performance.now();
      return m.session.run({
        input_ids: new m.ort.Tensor('int64', ids, [1, n]),
        token_type_ids: new m.ort.Tensor('int64', types, [1, n])
      }).then(function (out) {
        var result = Object.assign({}, enc, {
          text: text, n: n, layers: m.info.layers, heads: m.info.heads, hidden: m.info.hidden, maxLength: m.info.max_length,
          hiddenStates: out.hidden_states.data, attentions: out.attentions.data, ms: performance.now() - t0
        });
        state.timings.runMs = result.ms;
        return result;
      });
    });
  }

  /* ---------------------------------------------------------------- the attention-head explorer */
  var FONT = 'DejaVu Sans', BLACK = '#000000ff', PX = 11;  // 8 pt labels at 100 dpi, as the lesson's strips

  function textWidth(text, size) {
    var ctx = textWidth.ctx || (textWidth.ctx = document.createElement('canvas').getContext('2d'));
    ctx.font = size + 'px "' + FONT + '", "DejaVu Sans", Verdana, Arial, sans-serif';
    return ctx.measureText(text).width;
  }

  // slider labels a..b, as text
  function range(a, b) { var out = []; for (var i = a; i <= b; i++) out.push(String(i)); return out; }
  function short(label) { return label.length > 14 ? label.slice(0, 13) + '\u2026' : label; }

  /* The frames of helpers/attention/widgets.py's AttentionHeadExplorer for the reader's sentence:
     the same controls (layer, head, and the first token of a window for a long input), the same
     layout rules (whole-pixel cells, labels beside them, the 0-1 colour scale), drawn lazily. */
  function attentionFrames(result, cmap, widthBudget, window, start) {
    var n = result.n, W = Math.min(n, window), L = result.layers, H = result.heads;
    var labels = result.tokens.map(short);
    var thick = Math.ceil(Math.max.apply(null, labels.map(function (t) { return textWidth(t, PX); }))) + 6;
    var windowed = W < n, left = 28 + thick, bottom = 26 + thick, top = windowed ? 66 : 50, right = 84;
    var pitch = Math.floor(Math.min(28, Math.max(14, Math.floor(400 / W)), Math.floor((widthBudget - left - right) / W)));
    pitch = Math.max(pitch, 8);
    var side = W * pitch, width = left + side + right, height = bottom + side + top;
    var prims = [], fixed = [];
    function add(p) { prims.push(p); return prims.length - 1; }
    function text(lines, opts) {
      return add(Object.assign({ t: 'text', lines: lines, size: 12.5, color: BLACK, align: 'center', font: FONT }, opts));
    }
    fixed.push(add({ t: 'path', d: 'M0 0H' + width + 'V' + height + 'H0Z', fill: '#ffffffff' }));
    var heading = 'attention probability of one head (rows = queries): your sentence, run in this browser';
    fixed.push(text([[heading, width / 2, 16]], { size: 12 }));
    if (windowed) fixed.push(text([['a window of ' + W + ' of the ' + n + ' tokens, moved by \u2018first token\u2019; ' +
      'rows need not sum to 1 inside it', width / 2, 32]], { size: 12 }));
    fixed.push(text([['key (attended to)', left + side / 2, height - 6]], {}));
    fixed.push(text([['query (attending)', 16, top + side / 2]], { rot: 90 }));
    var bar = document.createElement('canvas');
    bar.width = 1; bar.height = cmap.length;
    var bctx = bar.getContext('2d');
    cmap.forEach(function (c, i) { bctx.fillStyle = c; bctx.fillRect(0, cmap.length - 1 - i, 1, 1); });
    var images = { 'live:bar': bar };
    fixed.push(add({ t: 'img', src: 'live:bar', box: [left + side + 14, top, 14, side], smooth: true }));
    fixed.push(add({ t: 'path', d: 'M' + (left + side + 14) + ' ' + top + 'h14v' + side + 'h-14Z', stroke: BLACK, lw: 1 }));
    [0, 0.2, 0.4, 0.6, 0.8, 1].forEach(function (v) {
      var y = top + side - v * side;
      fixed.push(add({ t: 'path', d: 'M' + (left + side + 28) + ' ' + y + 'h4', stroke: BLACK, lw: 1 }));
      fixed.push(text([[v.toFixed(1), left + side + 35, y + 4]], { align: 'left', size: PX }));
    });
    fixed.push(text([['attention probability', left + side + 72, top + side / 2]], { rot: 90 }));
    fixed.push(add({ t: 'path', d: 'M' + left + ' ' + top + 'h' + side + 'v' + side + 'h-' + side + 'Z', stroke: BLACK, lw: 1 }));
    var rgb = cmap.map(function (c) { return [1, 3, 5].map(function (k) { return parseInt(c.slice(k, k + 2), 16); }); });
    var cache = {};
    function frame(layer, head, first) {
      var key = layer + ',' + head + ',' + first;
      if (cache[key]) return cache[key];
      var heat = document.createElement('canvas');
      heat.width = W; heat.height = W;
      var ctx = heat.getContext('2d'), img = ctx.createImageData(W, W), peak = 0;
      var base = ((layer - 1) * H + head) * n * n;
      for (var q = 0; q < W; q++) {
        for (var k = 0; k < W; k++) {
          var v = result.attentions[base + (first + q) * n + first + k];
          if (v > peak) peak = v;
          var c = rgb[Math.max(0, Math.min(rgb.length - 1, Math.round(v * (rgb.length - 1))))], o = 4 * (q * W + k);
          img.data[o] = c[0]; img.data[o + 1] = c[1]; img.data[o + 2] = c[2]; img.data[o + 3] = 255;
        }
      }
      ctx.putImageData(img, 0, 0);
      images['live:' + key] = heat;
      var ids = fixed.slice();
      ids.push(add({ t: 'img', src: 'live:' + key, box: [left, top, side, side] }));
      var where = windowed ? '  |  tokens ' + first + '\u2013' + (first + W - 1) : '';
      ids.push(text([['layer ' + layer + ' of ' + L + ', head ' + head + where + '  |  max ' + peak.toFixed(2),
        left + side / 2, top - 8]], {}));
      var ys = [], xs = [];
      for (var i = 0; i < W; i++) {
        ys.push([labels[first + i], left - 4, top + (i + 0.5) * pitch + PX * 0.35]);
        xs.push([labels[first + i], left + (i + 0.5) * pitch + PX * 0.35, top + side + 4]);
      }
      ids.push(text(ys, { align: 'right', size: PX }));
      ids.push(text(xs, { align: 'right', size: PX, rot: 90 }));
      cache[key] = ids;
      return ids;
    }
    var controls = [
      { name: 'layer', label: 'layer', labels: range(1, L), value: 0 },
      { name: 'head', label: 'head', labels: range(0, H - 1), value: 0 }
    ];
    if (windowed) controls.push({ name: 'start', label: 'first token', labels: range(0, n - W), value: start || 0 });
    return {
      data: { format: 1, kind: 'frames', explorer: 'AttentionHeadExplorer', size: [width, height], scale: 2,
              live: true, controls: controls, prims: prims, geometry: [], frames: [] },
      images: images,
      frame: function (index) { return frame(+controls[0].labels[index[0]], +controls[1].labels[index[1]], windowed ? index[2] : 0); }
    };
  }

  /* ---------------------------------------------------------------- the layer-walk explorer */
  function niceTicks(lo, hi) {
    var raw = (hi - lo) / 5, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag;
    [1, 2, 2.5, 5, 10].some(function (m) { step = m * mag; return raw <= step; });
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(+v.toFixed(10));
    return out;
  }

  function tickText(v) { return Math.abs(v) < 1e-12 ? '0' : String(+v.toPrecision(3)); }

  /* An axes box [x, y, w, h] with limits: the static prims (frame, ticks, labels, title) and the mapping. */
  function axes(box, xlim, ylim, opts, add, text) {
    var X = function (v) { return box[0] + (v - xlim[0]) / (xlim[1] - xlim[0]) * box[2]; };
    var Y = function (v) { return box[1] + box[3] - (v - ylim[0]) / (ylim[1] - ylim[0]) * box[3]; };
    var ids = [add({ t: 'path', d: 'M' + box[0] + ' ' + box[1] + 'h' + box[2] + 'v' + box[3] + 'h-' + box[2] + 'Z',
                     stroke: BLACK, lw: 1 })];
    niceTicks(ylim[0], ylim[1]).forEach(function (v) {
      ids.push(add({ t: 'path', d: 'M' + box[0] + ' ' + Y(v) + 'h-4', stroke: BLACK, lw: 1 }));
      ids.push(text([[tickText(v), box[0] - 6, Y(v) + 4]], { align: 'right', size: PX }));
    });
    (opts.xticks || []).forEach(function (t) {
      ids.push(add({ t: 'path', d: 'M' + X(t[0]) + ' ' + (box[1] + box[3]) + 'v4', stroke: BLACK, lw: 1 }));
      ids.push(text([[t[1], X(t[0]), box[1] + box[3] + 16]], { size: PX }));
    });
    ids.push(text([[opts.xlabel, box[0] + box[2] / 2, box[1] + box[3] + 32]], {}));
    ids.push(text([[opts.ylabel, box[0] - 40, box[1] + box[3] / 2]], { rot: 90 }));
    ids.push(text([[opts.title, box[0] + box[2] / 2, box[1] - 7]], {}));
    return { X: X, Y: Y, ids: ids };
  }

  /* The frames of helpers/layerwalk/widgets.py's LayerWalkExplorer for the reader's sentence: the
     token's L2 norm at every layer (the shown layer highlighted), its cosine at every layer with
     itself at the shown layer, and its first dimensions there; controls token and layer. */
  function layerWalkFrames(result, settings, size) {
    var n = result.n, L1 = result.layers + 1, d = result.hidden, hs = result.hiddenStates;
    var nd = Math.min(settings.dims || 16, d), normal = settings.normal + 'ff', high = settings.highlight + 'ff';
    function vec(l, t) { return hs.subarray((l * n + t) * d, (l * n + t + 1) * d); }
    var norms = [], maxNorm = 0, maxDim = 0, minSim = 0;
    for (var t = 0; t < n; t++) {
      norms.push([]);
      for (var l = 0; l < L1; l++) {
        var v = vec(l, t), s2 = 0;
        for (var i = 0; i < d; i++) s2 += v[i] * v[i];
        norms[t].push(Math.sqrt(s2));
        maxNorm = Math.max(maxNorm, norms[t][l]);
        for (var j = 0; j < nd; j++) maxDim = Math.max(maxDim, Math.abs(v[j]));
      }
    }
    function cosines(t, at) {
      var a = vec(at, t), out = [];
      for (var l = 0; l < L1; l++) {
        var b = vec(l, t), dot = 0;
        for (var i = 0; i < d; i++) dot += a[i] * b[i];
        out.push(dot / (norms[t][at] * norms[t][l] || 1));
      }
      return out;
    }
    for (t = 0; t < n; t++) for (l = 0; l < L1; l++) minSim = Math.min(minSim, Math.min.apply(null, cosines(t, l)));
    var width = size[0], height = size[1], prims = [], fixed = [];
    function add(p) { prims.push(p); return prims.length - 1; }
    function text(lines, opts) {
      return add(Object.assign({ t: 'text', lines: lines, size: 12.5, color: BLACK, align: 'center', font: FONT }, opts));
    }
    fixed.push(add({ t: 'path', d: 'M0 0H' + width + 'V' + height + 'H0Z', fill: '#ffffffff' }));
    var names = ['emb'];
    for (l = 1; l < L1; l++) names.push(String(l));
    var xt = names.map(function (name, k) { return [k, name]; });
    var top = 60, gap = 70, colW = (width - 70 - 20 - gap) / 2, rowH = (height - top - 2 * 48 - 40) / 2;
    var aNorm = axes([70, top, colW, rowH], [-0.6, L1 - 0.4], [0, maxNorm * 1.1],
                     { xticks: xt, xlabel: 'layer', ylabel: 'L2 norm', title: 'L2 norm (orange: shown layer)' }, add, text);
    var aSim = axes([70 + colW + gap, top, colW, rowH], [-0.3, L1 - 0.7], [minSim - 0.05, 1.05],
                    { xticks: xt, xlabel: 'layer', ylabel: 'cosine', title: 'cosine with the shown layer' }, add, text);
    var dimTicks = niceTicks(0, nd - 1).filter(function (v) { return v === Math.round(v); })
      .map(function (v) { return [v, String(v)]; });
    var aDim = axes([70, top + rowH + 48 + 40, width - 90, rowH], [-0.6, nd - 0.4], [-maxDim * 1.1, maxDim * 1.1],
                    { xticks: dimTicks, xlabel: 'dimension', ylabel: 'value', title: 'first ' + nd + ' dimensions' }, add, text);
    fixed = fixed.concat(aNorm.ids, aSim.ids, aDim.ids);
    fixed.push(text([['your sentence, run in this browser', width - 8, 16]], { align: 'right', size: PX }));
    function bar(ax, x, h, colour) {
      var x0 = ax.X(x - 0.4), x1 = ax.X(x + 0.4), y0 = ax.Y(0), y1 = ax.Y(h);
      return add({ t: 'path', d: 'M' + x0 + ' ' + y0 + 'H' + x1 + 'V' + y1 + 'H' + x0 + 'Z', fill: colour });
    }
    var cache = {};
    function frame(token, layer) {
      var key = token + ',' + layer;
      if (cache[key]) return cache[key];
      var ids = fixed.slice();
      norms[token].forEach(function (h, k) { ids.push(bar(aNorm, k, h, k === layer ? high : normal)); });
      var sims = cosines(token, layer);
      ids.push(add({ t: 'path', d: 'M' + sims.map(function (c, k) { return aSim.X(k) + ' ' + aSim.Y(c); }).join('L'),
                     stroke: normal, lw: 2 }));
      ids.push(add({ t: 'marks', d: 'M-4 0A4 4 0 1 0 4 0A4 4 0 1 0 -4 0Z', fill: normal,
                     at: sims.map(function (c, k) { return [aSim.X(k), aSim.Y(c)]; }) }));
      ids.push(add({ t: 'marks', d: 'M-7 0A7 7 0 1 0 7 0A7 7 0 1 0 -7 0Z', fill: high,
                     at: [[aSim.X(layer), aSim.Y(sims[layer])]] }));
      var v = vec(layer, token);
      for (var j = 0; j < nd; j++) ids.push(bar(aDim, j, v[j], normal));
      ids.push(text([['token ' + token + ' \'' + result.tokens[token] + '\' at ' + (layer === 0 ? 'embeddings' : 'layer ' + layer),
                      width / 2, 36]], { size: 14 }));
      cache[key] = ids;
      return ids;
    }
    var controls = [
      { name: 'token', label: 'token', labels: result.tokens.map(function (tk, i) { return i + ': ' + tk; }), value: 0 },
      { name: 'layer', label: 'layer', labels: names.map(function (x, k) { return String(k); }), value: 0 }
    ];
    return {
      data: { format: 1, kind: 'frames', explorer: 'LayerWalkExplorer', size: [width, height], scale: 2,
              live: true, controls: controls, prims: prims, geometry: [], frames: [] },
      images: {},
      frame: function (index) { return frame(index[0], index[1]); }
    };
  }

  /* ---------------------------------------------------------------- the head-lines explorer */
  /* The frames of helpers/attention/widgets.py's HeadLinesExplorer for the reader's sentence: one
     head as lines from each query token (left) to each key token (right), the opacity the
     attention weight; past the window's size a 'start' slider moves a window, fainter lines left out. */
  function headLinesFrames(result, settings) {
    var n = result.n, L = result.layers, H = result.heads, row = settings.row_px || 28;
    var W = Math.min(n, settings.window || 30), windowed = n > W, floor = windowed ? (settings.min_weight || 0) : 0;
    var width = 480, top = 40, bottom = windowed ? 56 : 20, height = (W + 1) * row + top + bottom;
    var X = function (v) { return (v + 0.6) * width / 2.2; };
    var Y = function (q) { return top + row + (q + 0.5) * row; };
    var prims = [], fixed = [], segments = [];
    function add(p) { prims.push(p); return prims.length - 1; }
    function text(lines, opts) {
      return add(Object.assign({ t: 'text', lines: lines, size: 12.5, color: BLACK, align: 'center', font: FONT }, opts));
    }
    for (var q = 0; q < W; q++) for (var k = 0; k < W; k++) segments.push('M' + X(0) + ' ' + Y(q) + 'L' + X(1) + ' ' + Y(k));
    fixed.push(add({ t: 'path', d: 'M0 0H' + width + 'V' + height + 'H0Z', fill: '#ffffffff' }));
    fixed.push(text([['query', X(-0.05), top + row * 0.7]], { align: 'right', size: PX, weight: 'bold' }));
    fixed.push(text([['key', X(1.05), top + row * 0.7]], { align: 'left', size: PX, weight: 'bold' }));
    if (windowed) fixed.push(text([['a window of ' + W + ' of the ' + n + ' tokens (slider \u2018start\u2019);', width / 2, height - 22],
                                   ['lines to keys outside it, and lines below ' + Math.round(floor * 100) + '% weight, are not drawn',
                                    width / 2, height - 8]], { size: PX }));
    var cache = {};
    function hex(v) { var b = Math.round(Math.max(0, Math.min(1, v)) * 255); return (b < 16 ? '0' : '') + b.toString(16); }
    function frame(layer, head, first) {
      var key = layer + ',' + head + ',' + first;
      if (cache[key]) return cache[key];
      var base = ((layer - 1) * H + head) * n * n, alpha = [];
      for (var q = 0; q < W; q++) for (var k = 0; k < W; k++) {
        var v = result.attentions[base + (first + q) * n + first + k];
        alpha.push(hex(v < floor ? 0 : v));
      }
      var ids = fixed.slice(), left = [], right = [];
      ids.push(add({ t: 'coll', g: 0, stroke: { rgb: settings.colour || '#1f77b4', a: alpha.join('') }, lw: 2, cap: 'butt', join: 'round' }));
      for (q = 0; q < W; q++) {
        var i = first + q, tok = short(result.tokens[i]);
        left.push([windowed ? tok + '  ' + i : tok, X(-0.05), Y(q) + PX * 0.35]);
        right.push([windowed ? i + '  ' + tok : tok, X(1.05), Y(q) + PX * 0.35]);
      }
      ids.push(text(left, { align: 'right', size: PX }));
      ids.push(text(right, { align: 'left', size: PX }));
      var title = 'attention (opacity), layer ' + layer + ', head ' + head +
        (windowed ? ', tokens ' + first + '\u2013' + (first + W - 1) : '') + ' \u2014 your sentence, run in this browser';
      ids.push(text([[title, width / 2, 20]], { size: 12 }));
      cache[key] = ids;
      return ids;
    }
    var controls = [
      { name: 'layer', label: 'layer', labels: range(1, L), value: 0 },
      { name: 'head', label: 'head', labels: range(0, H - 1), value: 0 }
    ];
    if (windowed) controls.push({ name: 'start', label: 'start', labels: range(0, n - W), value: 0 });
    return {
      data: { format: 1, kind: 'frames', explorer: 'HeadLinesExplorer', size: [width, height], scale: 2,
              live: true, controls: controls, prims: prims, geometry: [segments], frames: [] },
      images: {},
      frame: function (index) { return frame(+controls[0].labels[index[0]], +controls[1].labels[index[1]], windowed ? index[2] : 0); }
    };
  }

  /* ---------------------------------------------------------------- lesson 09's neighbour explorer */
  /* The frames of helpers/context/widgets.py's NeighbourExplorer for the reader's sentence: at one
     layer, the cosine between the chosen token and every other token (top, in order; the chosen one
     left out, marked by a triangle) and its k nearest by name (bottom), the lesson's random-pair
     baseline dashed (settings: what the lesson's explorer recorded, LogitsBox.site_browser's kin). */
  function neighbourFrames(result, settings, size) {
    var n = result.n, d = result.hidden, L = result.layers, hs = result.hiddenStates;
    var unit = new Float32Array(hs.length);  // every vector scaled to length 1
    for (var v = 0; v < (L + 1) * n; v++) {
      var norm = 0;
      for (var j = 0; j < d; j++) norm += hs[v * d + j] * hs[v * d + j];
      norm = Math.sqrt(norm) || 1;
      for (j = 0; j < d; j++) unit[v * d + j] = hs[v * d + j] / norm;
    }
    var rows = {};
    function cosines(layer, token) {  // [n]: the token's cosine with every token at the layer
      var key = layer + ',' + token;
      if (rows[key]) return rows[key];
      var out = new Float64Array(n), a = (layer * n + token) * d;
      for (var i = 0; i < n; i++) {
        var s = 0, b = (layer * n + i) * d;
        for (var j = 0; j < d; j++) s += unit[a + j] * unit[b + j];
        out[i] = s;
      }
      return (rows[key] = out);
    }
    // one y range for every token and layer, from the cosines with other tokens and the baseline
    var base = settings.baseline, lo = 0, hi = 0;
    for (var layer = 0; layer <= L; layer++) for (var t = 1; t < n; t++) {  // each pair once
      var a = (layer * n + t) * d;
      for (var i = 0; i < t; i++) {
        var c = 0, b = (layer * n + i) * d;
        for (var j = 0; j < d; j++) c += unit[a + j] * unit[b + j];
        if (c < lo) lo = c;
        if (c > hi) hi = c;
      }
    }
    if (n < 2) hi = 1;
    (base || []).forEach(function (b) { lo = Math.min(lo, b); hi = Math.max(hi, b); });
    var pad = 0.05 * Math.max(hi - lo, 0.1), ylim = [lo - pad, Math.min(1.05, hi + pad)];
    var k = Math.max(0, Math.min(settings.k || 5, n - 1)), labelled = n <= (settings.max_labelled || 40);
    var labels = result.tokens.map(short);
    var thick = labelled ? Math.ceil(Math.max.apply(null, labels.map(function (x) { return textWidth(x, PX); }))) + 8 : 14;
    var width = Math.max(480, Math.min(size[0] || 720, 900)), top = 64, plotH = 200;
    var box = [64, top, width - 84, plotH], near = [130, top + plotH + thick + 62, width - 150, Math.max(1, k) * 18];
    var height = near[1] + near[3] + 44;
    var prims = [], fixed = [];
    function add(p) { prims.push(p); return prims.length - 1; }
    function text(lines, opts) {
      return add(Object.assign({ t: 'text', lines: lines, size: 12.5, color: BLACK, align: 'center', font: FONT }, opts));
    }
    var X = function (x) { return box[0] + (x + 0.6) / (n + 0.2) * box[2]; };  // x from -0.6 to n - 0.4, as the lesson
    var Y = function (y) { return box[1] + box[3] - (y - ylim[0]) / (ylim[1] - ylim[0]) * box[3]; };
    var xlimN = [Math.min(0, lo), ylim[1]];
    var XN = function (x) { return near[0] + (x - xlimN[0]) / (xlimN[1] - xlimN[0]) * near[2]; };
    fixed.push(add({ t: 'path', d: 'M0 0H' + width + 'V' + height + 'H0Z', fill: '#ffffffff' }));
    fixed.push(text([['your sentence, run in this browser', width - 8, 14]], { align: 'right', size: PX }));
    fixed.push(add({ t: 'path', d: 'M' + box[0] + ' ' + box[1] + 'h' + box[2] + 'v' + box[3] + 'h-' + box[2] + 'Z', stroke: BLACK, lw: 1 }));
    niceTicks(ylim[0], ylim[1]).forEach(function (y) {
      fixed.push(add({ t: 'path', d: 'M' + box[0] + ' ' + Y(y) + 'h-4', stroke: BLACK, lw: 1 }));
      fixed.push(text([[tickText(y), box[0] - 6, Y(y) + 4]], { align: 'right', size: PX }));
    });
    fixed.push(text([['cosine', box[0] - 44, box[1] + box[3] / 2]], { rot: 90 }));
    if (labelled) {
      fixed.push(text(labels.map(function (x, i) { return [x, X(i) + PX * 0.35, box[1] + box[3] + 6]; }), { align: 'right', size: PX, rot: 90 }));
      fixed.push(text([['token of the sentence (orange triangle: the chosen one, left out)', box[0] + box[2] / 2,
                        box[1] + box[3] + thick + 16]], {}));
    } else fixed.push(text([['position: all ' + n + ' tokens, too many to name (orange triangle: the chosen one)',
                             box[0] + box[2] / 2, box[1] + box[3] + thick + 16]], {}));
    fixed.push(text([['the ' + k + ' nearest tokens', near[0] + near[2] / 2, near[1] - 8]], {}));
    fixed.push(add({ t: 'path', d: 'M' + near[0] + ' ' + near[1] + 'h' + near[2] + 'v' + near[3] + 'h-' + near[2] + 'Z', stroke: BLACK, lw: 1 }));
    niceTicks(xlimN[0], xlimN[1]).forEach(function (x) {
      fixed.push(add({ t: 'path', d: 'M' + XN(x) + ' ' + (near[1] + near[3]) + 'v4', stroke: BLACK, lw: 1 }));
      fixed.push(text([[tickText(x), XN(x), near[1] + near[3] + 16]], { size: PX }));
    });
    fixed.push(text([['cosine' + (base ? ' (dashed: random pairs)' : ''), near[0] + near[2] / 2, near[1] + near[3] + 34]], {}));
    var cache = {};
    function frame(token, layer) {
      var key = token + ',' + layer;
      if (cache[key]) return cache[key];
      var row = Array.prototype.slice.call(cosines(layer, token)), ids = fixed.slice(), w = 0.4 * box[2] / (n + 0.2);
      row[token] = 0;  // its cosine with itself is 1 by definition: left out, marked by the triangle
      row.forEach(function (c, i) {
        ids.push(add({ t: 'path', d: 'M' + (X(i) - w) + ' ' + Y(0) + 'H' + (X(i) + w) + 'V' + Y(c) + 'H' + (X(i) - w) + 'Z',
                       fill: i === token ? settings.highlight : settings.normal }));
      });
      ids.push(add({ t: 'marks', d: 'M0 -6L6 5L-6 5Z', fill: settings.highlight, at: [[X(token), Y(0)]] }));
      var others = row.map(function (c, i) { return i; }).filter(function (i) { return i !== token; });
      others.sort(function (a, b) { return row[b] - row[a] || a - b; });
      others.slice(0, k).forEach(function (pos, r) {
        var y0 = near[1] + r * 18 + 3, y1 = y0 + 12;
        ids.push(add({ t: 'path', d: 'M' + XN(0) + ' ' + y0 + 'H' + XN(row[pos]) + 'V' + y1 + 'H' + XN(0) + 'Z', fill: settings.normal }));
        ids.push(text([[pos + ': ' + result.tokens[pos], near[0] - 6, y0 + 10]], { align: 'right', size: PX }));
      });
      var title = 'cosine of \'' + result.tokens[token] + '\' (position ' + token + ') with the other tokens, ' +
        (layer === 0 ? 'the embeddings' : 'layer ' + layer);
      ids.push(text([[title, box[0] + box[2] / 2, base ? 30 : 48]], {}));
      if (base) {
        var b = base[layer];
        ids.push(text([['(dashed: random-pair baseline ' + b.toFixed(2) + ')', box[0] + box[2] / 2, 48]], {}));
        ids.push(add({ t: 'path', d: 'M' + box[0] + ' ' + Y(b) + 'h' + box[2], stroke: BLACK, lw: 1, dash: [4, 3] }));
        ids.push(add({ t: 'path', d: 'M' + XN(b) + ' ' + near[1] + 'v' + near[3], stroke: BLACK, lw: 1, dash: [4, 3] }));
      }
      ids.push(add({ t: 'path', d: 'M' + box[0] + ' ' + Y(0) + 'h' + box[2], stroke: BLACK, lw: 0.5 }));
      cache[key] = ids;
      return ids;
    }
    var controls = [
      { name: 'token', label: 'token', labels: result.tokens.map(function (tk, i) { return i + ': ' + tk; }), value: 0 },
      { name: 'layer', label: 'layer', labels: hs.length ? Object.keys(new Array(L + 1).fill(0)) : [], value: 0 }
    ];
    return {
      data: { format: 1, kind: 'frames', explorer: 'NeighbourExplorer', size: [width, height], scale: 2,
              live: true, controls: controls, prims: prims, geometry: [], frames: [] },
      images: {}, cosines: cosines,
      frame: function (index) { return frame(index[0], index[1]); }
    };
  }

  /* ---------------------------------------------------------------- lesson 04's classification box */
  function floats(b64) {
    var bytes = Uint8Array.from(atob(b64), function (c) { return c.charCodeAt(0); });
    return new Float32Array(bytes.buffer);
  }

  /* The lesson's trained head (helpers/classify/widgets.py LogitsBox.site_browser, recorded when the
     site was built) on the model's vector of the reader's sentence: the layer's [CLS] ("cls") or the
     mean over its tokens ("mean"), standardised with the training statistics, then W x + b. */
  function headLogits(result, head) {
    if (!head.arrays) head.arrays = { W: floats(head.weight), b: floats(head.bias), mu: floats(head.mu), sigma: floats(head.sigma) };
    var a = head.arrays, n = result.n, d = result.hidden, C = head.classes, base = head.layer * n * d;
    if (a.mu.length !== d || a.W.length !== C * d) throw new Error('the lesson\u2019s head does not fit this model');
    var x = new Float64Array(d);
    for (var j = 0; j < d; j++) {
      if (head.pooling === 'mean') {
        var s = 0;
        for (var i = 0; i < n; i++) s += result.hiddenStates[base + i * d + j];
        x[j] = s / n;
      } else x[j] = result.hiddenStates[base + j];
      x[j] = (x[j] - a.mu[j]) / a.sigma[j];
    }
    var logits = [];
    for (var c = 0; c < C; c++) {
      var z = a.b[c];
      for (j = 0; j < d; j++) z += a.W[c * d + j] * x[j];
      logits.push(z);
    }
    return logits;
  }

  /* One panel of helpers/classify/plots.py's plot_logits_examples (the site's picture of the box) for
     the reader's sentence: a horizontal bar per class, the predicted one orange, the title the
     sentence -> id (class); one logit scale kept across sentences, widened only when needed (as the
     notebook's box keeps its axis). */
  function logitsFrames(result, head, size) {
    var logits = headLogits(result, head), C = logits.length, pred = 0;
    logits.forEach(function (v, c) { if (v > logits[pred]) pred = c; });
    var lo = 0, hi = 0;
    Object.keys(head.examples || {}).concat(['']).forEach(function (s) {
      (s ? head.examples[s] : logits).forEach(function (v) { lo = Math.min(lo, v); hi = Math.max(hi, v); });
    });
    if (head.xlim) { lo = Math.min(lo, head.xlim[0]); hi = Math.max(hi, head.xlim[1]); }
    head.xlim = [lo, hi];
    var pad = 0.08 * (hi - lo) + 1e-6, xlim = [lo - pad, hi + pad];
    var labelW = Math.ceil(Math.max.apply(null, head.names.map(function (t) { return textWidth(String(t), PX); }))) + 14;
    var row = 18, top = 70, width = Math.max(360, Math.min(size[0] || 640, 760)), height = top + C * row + 44;
    var box = [labelW + 8, top, width - labelW - 28, C * row];
    var prims = [], ids = [];
    function add(p) { prims.push(p); ids.push(prims.length - 1); return prims.length - 1; }
    function text(lines, opts) {
      return add(Object.assign({ t: 'text', lines: lines, size: 12.5, color: BLACK, align: 'center', font: FONT }, opts));
    }
    var X = function (v) { return box[0] + (v - xlim[0]) / (xlim[1] - xlim[0]) * box[2]; };
    add({ t: 'path', d: 'M0 0H' + width + 'V' + height + 'H0Z', fill: '#ffffffff' });
    var shown = result.text.length > 70 ? result.text.slice(0, 69) + '\u2026' : result.text;
    text([['\u201c' + shown + '\u201d', box[0], 20]], { align: 'left', size: PX });
    text([['\u2192 id ' + pred + ' (' + head.names[pred] + ')' + (result.dropped ? ', first ' + result.maxLength + ' tokens' : ''),
           box[0], 36]], { align: 'left', size: 12.5, weight: 'bold' });
    text([['logits of the lesson\u2019s head (layer ' + head.layer + ', ' + (head.pooling === 'mean' ? 'mean of the tokens' : '[CLS]') +
           '): your sentence, run in this browser', width / 2, 56]], { size: PX });
    logits.forEach(function (v, c) {
      var y0 = top + c * row + row * 0.15, y1 = top + (c + 1) * row - row * 0.15, x0 = X(0), x1 = X(v);
      add({ t: 'path', d: 'M' + x0 + ' ' + y0 + 'H' + x1 + 'V' + y1 + 'H' + x0 + 'Z', fill: c === pred ? head.highlight : head.normal });
    });
    text(head.names.map(function (name, c) { return [String(name), box[0] - 6, top + (c + 0.5) * row + PX * 0.35]; }),
         { align: 'right', size: PX });
    add({ t: 'path', d: 'M' + X(0) + ' ' + top + 'v' + box[3], stroke: BLACK, lw: 0.7 });
    add({ t: 'path', d: 'M' + box[0] + ' ' + box[1] + 'h' + box[2] + 'v' + box[3] + 'h-' + box[2] + 'Z', stroke: BLACK, lw: 1 });
    niceTicks(xlim[0], xlim[1]).forEach(function (v) {
      add({ t: 'path', d: 'M' + X(v) + ' ' + (top + box[3]) + 'v4', stroke: BLACK, lw: 1 });
      text([[tickText(v), X(v), top + box[3] + 17]], { size: PX });
    });
    text([['logit', box[0] + box[2] / 2, top + box[3] + 34]], { size: PX });
    return {
      data: { format: 1, kind: 'frames', explorer: 'LogitsBox', size: [width, height], scale: 2,
              live: true, controls: [], prims: prims, geometry: [], frames: [] },
      images: {}, logits: logits, prediction: pred,
      frame: function () { return ids; }
    };
  }

  function sameControls(built, original) {
    // open on the control values the lesson's explorer shows now (clamped to the new input)
    original.data.controls.forEach(function (c, k) {
      built.data.controls.forEach(function (mine) {
        if (mine.name === c.name) mine.value = Math.min(original.index[k], mine.labels.length - 1);
      });
    });
    return built;
  }

  /* What each supported explorer needs: its frames for a result, from the lesson's own explorer. */
  var KINDS = {
    AttentionHeadExplorer: function (result, info, original) {
      return sameControls(attentionFrames(result, info.cmap, original.data.size[0],
                                          (info.explorers || {}).head_window || 32), original);
    },
    HeadLinesExplorer: function (result, info, original) {
      return sameControls(headLinesFrames(result, (info.explorers || {}).head_lines || {}), original);
    },
    NeighbourExplorer: function (result, info, original) {
      return sameControls(neighbourFrames(result, original.data.browser || {}, original.data.size), original);
    },
    LogitsBox: function (result, info, original) { return logitsFrames(result, original.head, original.data.size); },
    LayerWalkExplorer: function (result, info, original) {
      return sameControls(layerWalkFrames(result, (info.explorers || {}).layer_walk || {}, original.data.size), original);
    }
  };

  /* ---------------------------------------------------------------- the text box */
  function el(tag, props, children) {
    var e = document.createElement(tag);
    Object.keys(props || {}).forEach(function (k) {
      if (k === 'style') e.style.cssText = props[k];
      else if (k in e) e[k] = props[k];
      else e.setAttribute(k, props[k]);
    });
    (children || []).forEach(function (c) { e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }

  function attach(root, original) {
    if (root.courseTry || !KINDS[original.data.explorer]) return;
    var sizes = script ? { model: +script.getAttribute('data-model-bytes'), runtime: +script.getAttribute('data-runtime-bytes'),
                           name: script.getAttribute('data-model') } : {};
    var why = unavailable();
    var input = el('input', { type: 'text', value: original.data.text || '', className: 'course-try-input',
                              'aria-label': 'your sentence', placeholder: 'Type a sentence',
                              style: 'flex:1 1 16em;min-width:0;padding:0.3em;font:inherit' });
    var button = el('button', { type: 'submit', className: 'course-try-run', textContent: 'Run the model in this browser',
                                style: 'padding:0.3em 0.7em;font:inherit;cursor:pointer' });
    var back = el('button', { type: 'button', className: 'course-try-back', textContent: 'Back to the lesson\u2019s sentence',
                              hidden: true, style: 'padding:0.3em 0.7em;font:inherit;cursor:pointer' });
    var bar = el('progress', { className: 'course-try-progress', max: 1, value: 0, hidden: true, style: 'width:100%' });
    var note = el('p', { className: 'course-try-note', role: 'status', 'aria-live': 'polite', style: 'margin:0.3em 0;font-size:0.9em' });
    var form = el('form', { className: 'course-try', style: 'margin:0.6em 0;padding:0.5em 0.7em;border:1px solid #c8ccd0;border-radius:4px' }, [
      el('label', { style: 'display:block;font-weight:600;margin:0 0 0.3em' }, ['Try your own sentence']),
      el('div', { style: 'display:flex;flex-wrap:wrap;gap:0.4em' }, [input, button, back]),
      bar, note
    ]);
    var live = el('div', { className: 'course-explorer-own', hidden: true },
                  [el('div', { className: 'course-explorer-stage', style: 'line-height:0;max-width:100%' })]);
    root.parentNode.insertBefore(form, root.nextSibling);
    form.parentNode.insertBefore(live, form.nextSibling);
    root.courseTry = form;
    var total = (sizes.model || 0) + (sizes.runtime || 0);
    if (why) {
      input.disabled = true; button.disabled = true;
      form.setAttribute('data-unavailable', why);
      note.textContent = 'Not here: ' + why + '. The explorer above shows the lesson\u2019s sentence, computed when the site was built.';
      return;
    }
    note.textContent = 'The model (' + (sizes.name || 'the lessons\u2019 model') + ') runs in this browser: the first run downloads ' +
      mb(total) + ' (' + mb(sizes.model || 0) + ' of weights, ' + mb(sizes.runtime || 0) + ' of ONNX Runtime Web), once; ' +
      'the browser keeps it. Same weights as the notebook (PyTorch), checked equal by the course\u2019s tests.';
    back.addEventListener('click', function () {
      live.hidden = true; root.hidden = false; back.hidden = true;
      form.removeAttribute('data-state');
    });
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      if (!input.value.trim()) { note.textContent = 'Type a sentence first (the box is empty).'; return; }
      form.courseRun(input.value).catch(function () {});  // the note says what went wrong
    });
    // the real work, kept apart so tests and timings can call it
    form.courseRun = function (text) {
      var t0 = performance.now();
      button.disabled = true;
      form.setAttribute('data-state', 'running');
      bar.hidden = !!state.ready;
      note.textContent = state.ready ? 'Running the model\u2026' : 'Loading the model (' + mb(total) + ')\u2026';
      return load(function (done, size) {
        bar.max = size; bar.value = done;
        note.textContent = 'Loading the model: ' + mb(done) + ' of ' + mb(size) + '\u2026';
      }).then(function (m) {
        return run(text).then(function (result) {
          var built = KINDS[original.data.explorer](result, m.info, original);
          var stage = live.querySelector('.course-explorer-stage');
          var old = live.querySelector('.course-explorer-controls');
          if (old) old.remove();
          stage.innerHTML = '';
          var explorer = new window.courseExplorers.Explorer(live, built.data);
          Object.keys(built.images).forEach(function (k) { explorer.images[k] = built.images[k]; });
          explorer.frame = function () {
            var ids = built.frame(this.index);
            Object.keys(built.images).forEach(function (k) { explorer.images[k] = built.images[k]; });
            return ids;
          };
          explorer.canvas.style.cssText = 'display:block;position:static;visibility:visible;width:' +
            built.data.size[0] + 'px;max-width:100%;height:auto';
          explorer.show();
          root.hidden = true; live.hidden = false; back.hidden = false; bar.hidden = true;
          state.ready = true;
          state.timings.firstPictureMs = performance.now() - t0;
          var said = 'Your sentence, ' + result.n + ' tokens, computed in this browser in ' + Math.round(result.ms) + ' ms.';
          if (result.dropped) said += ' It has ' + result.total + ' tokens but the model reads at most ' + result.maxLength +
            ': the last ' + result.dropped + ' were left out (truncated), as the notebook does.';
          if (built.logits) {  // lesson 04's box: what the head decided, for the reader and the tests
            said += ' The lesson\u2019s head predicts id ' + built.prediction + ' (' + original.head.names[built.prediction] + ').';
            form.setAttribute('data-prediction', String(built.prediction));
            live.courseLogits = built.logits;
          }
          note.textContent = said;
          form.setAttribute('data-state', 'done');
          form.setAttribute('data-dropped', String(result.dropped));
          live.courseLive = explorer;
          return { result: result, explorer: explorer };
        });
      }).catch(function (err) {
        note.textContent = 'The model could not run here (' + err.message + '); the explorer above shows the lesson\u2019s sentence.';
        form.setAttribute('data-state', 'failed');
        form.setAttribute('data-error', String(err.message));
        throw err;
      }).finally(function () { button.disabled = false; });
    };
  }

  function start() {
    if (window.courseExplorers) window.courseExplorers.start();
    document.querySelectorAll('div.course-explorer').forEach(function (root) {
      if (!root.courseExplorer) return;
      root.courseExplorer.then(function (original) { if (original) attach(root, original); });
    });
    // lesson 04's box: a picture of examples (no frames) and the lesson's trained head beside the page
    document.querySelectorAll('script.course-browser-head').forEach(function (tag) {
      var picture = tag.getAttribute('data-picture'), head;
      try { head = JSON.parse(tag.textContent); } catch (err) { return; }
      var img = Array.prototype.filter.call(document.images, function (i) {
        return (i.getAttribute('src') || '').indexOf(picture) >= 0;
      })[0];
      if (!img) return;
      var root = img.closest('figure') || img;
      attach(root, { data: { explorer: 'LogitsBox', text: head.sentence, controls: [],
                             size: [+img.getAttribute('width') || img.naturalWidth || 640] }, index: [], head: head });
    });
  }
  if (document.readyState !== 'loading') start();
  else document.addEventListener('DOMContentLoaded', start);
  window.courseBrowserModel = { load: load, run: run, unavailable: unavailable, timings: state.timings, base: BASE };
})();
