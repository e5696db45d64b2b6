"""The course's model in the reader's browser (issue 50, ``book/browser_model.py``) gives what
the notebook's PyTorch model gives.

* In Node.js (fast, no browser): ``book/static/course-wordpiece.js`` tokenizes held-out
  sentences into exactly the token ids of the Python tokenizer the lessons use, truncation to
  the model's maximum length included.
* In headless Chromium (``browser``): the site's own runtime (``course-browser-model.js``: ONNX
  Runtime Web over the exported ONNX file, served from a local folder, the network blocked) gives
  the same token ids and every hidden state and attention map within
  ``browser_model.TOLERANCE`` (absolute, fp32) of PyTorch's, for held-out sentences: one past the
  model's maximum length (read from the config; the page says it was truncated) and one with
  characters outside the vocabulary ([UNK]).

The real bundled model throughout; the export is cached in build/browser-model-cache/.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers.model.trace import encode, max_input_tokens

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "book" / "static"
CACHE = Path(os.environ.get("COURSE_BROWSER_MODEL_CACHE", ROOT / "build" / "browser-model-cache"))
REQUIRED = os.environ.get("COURSE_REQUIRE_BROWSER") == "1"


def _module():
    spec = importlib.util.spec_from_file_location("book_browser_model", ROOT / "book" / "browser_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bm = _module()


def long_text(tokenizer, model) -> str:
    """A text past the model's maximum input length (read from the config and tokenizer)."""
    limit = max_input_tokens(tokenizer, model)
    sentence = "The ferry waited at the pier while gulls circled over the grey harbour. "
    per = len(tokenizer(sentence, add_special_tokens=False)["input_ids"])
    return sentence * (limit // per + 2)


# Sentences no lesson uses; the second has characters outside the vocabulary.
HELD_OUT = [
    "Mrs. O'Neill's café re-opened at 7:45 -- didn't you hear?",
    "The glyphs \u16a0\u16a2\u16a6 and \U0001f99c \U0001f6f8 are not words; \u2603!",
    "Na\u00efve \u00dcBER-fast r\u00e9sum\u00e9s, \u00c5ngstr\u00f6m & co.\u00a0\u2014 \u201cquoted\u201d",
    "\u6211\u7231\u5317\u4eac and \u3053\u3093\u306b\u3061\u306f mixed\twith\ttabs\nand lines",
    "a [MASK] token, an [UNK] one, supercalifragilisticexpialidociousnessesandthensomemorelettersuntilthewordislongerthanonehundredcharactersforsurenowyes",
]


def python_ids(tokenizer, model, text: str) -> tuple[list[int], int]:
    """Token ids and tokens dropped, as the lessons encode (``helpers.model.trace.encode``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the truncation warning: the count is compared instead
        enc, dropped = encode(tokenizer, model, text)
    return enc["input_ids"][0].tolist(), dropped


# ------------------------------------------------------------------------------ Node.js
NODE_RUNNER = """
const fs = require('fs');
const {Tokenizer} = require(process.argv[2]);
const job = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const tok = new Tokenizer(job.settings);
process.stdout.write(JSON.stringify(job.texts.map(t => tok.encode(t, job.max_length))));
"""


def test_wordpiece_in_node_matches_python(tokenizer, model, tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("no Node.js (`node`) to run course-wordpiece.js")
    limit = max_input_tokens(tokenizer, model)
    texts = HELD_OUT + [long_text(tokenizer, model), "\u0000\ufffd\u200b x\u0301y"]
    (tmp_path / "job.json").write_text(json.dumps({"settings": bm.tokenizer_settings(tokenizer), "texts": texts,
                                                   "max_length": limit}), encoding="utf-8")
    (tmp_path / "run.js").write_text(NODE_RUNNER, encoding="utf-8")
    out = subprocess.run([node, str(tmp_path / "run.js"), str(STATIC / "course-wordpiece.js"), str(tmp_path / "job.json")],
                         capture_output=True, text=True, timeout=120, check=True)
    results = json.loads(out.stdout)
    unk = tokenizer.convert_tokens_to_ids(tokenizer.unk_token)
    for text, got in zip(texts, results):
        ids, dropped = python_ids(tokenizer, model, text)
        assert got["ids"] == ids, f"{text[:60]!r}: JS {got['tokens'][:20]} vs Python {tokenizer.convert_ids_to_tokens(ids)[:20]}"
        assert got["dropped"] == dropped
    # the held-out set really exercises the edges: an [UNK], a kept [MASK], a truncation
    assert unk in results[1]["ids"]
    assert tokenizer.mask_token_id in results[4]["ids"]
    assert results[len(HELD_OUT)]["dropped"] > 0 and len(results[len(HELD_OUT)]["ids"]) == limit


def test_tokenizer_settings_refuse_a_tokenizer_that_is_not_bert():
    class NotBert:
        cls_token, sep_token, unk_token = None, "</s>", "<unk>"

    with pytest.raises(bm.Unavailable, match="BERT"):
        bm.tokenizer_settings(NotBert())


def test_attach_puts_the_box_only_beside_explorers_it_can_redraw(tmp_path):
    import base64
    import gzip

    def page(explorer: str) -> str:
        packed = base64.b64encode(gzip.compress(json.dumps({"explorer": explorer}).encode())).decode()
        return ('<html><head></head><body><script type="application/octet-stream" class="course-frames" '
                f'data-encoding="gzip-base64">{packed}</script></body></html>')

    (tmp_path / "lessons").mkdir()
    (tmp_path / "_static" / bm.FOLDER).mkdir(parents=True)
    (tmp_path / "_static" / bm.FOLDER / "model.json").write_text(json.dumps(
        {"model": "m", "onnx": {"bytes": 123}, "runtime": {"bytes": 45}}))
    (tmp_path / "lessons" / "02_a.html").write_text(page(bm.SUPPORTED[0]))
    (tmp_path / "lessons" / "04_b.html").write_text(page("LogitsBox"))
    (tmp_path / "lessons" / "05_c.html").write_text("<html><head></head><body>no explorer</body></html>")
    assert bm.attach(tmp_path) == {"pages": 1, "explorers": 1}
    with_box = (tmp_path / "lessons" / "02_a.html").read_text()
    assert all(f'src="../_static/{name}"' in with_box for name in bm.SCRIPTS)
    assert 'data-model-bytes="123"' in with_box and 'data-runtime-bytes="45"' in with_box
    assert all(bm.SCRIPTS[1] not in (tmp_path / "lessons" / name).read_text() for name in ("04_b.html", "05_c.html"))


# ------------------------------------------------------------------------------ Chromium
@pytest.fixture(scope="module")
def site(tmp_path_factory, tokenizer, model):
    """A folder with the runtime, the export and the two scripts, as ``build/site/_static`` holds them."""
    import browser_support as bs  # tests/ is on sys.path (rootdir conftest)

    reason = bs.chromium_missing_reason()
    if reason:
        if REQUIRED:
            pytest.fail(f"COURSE_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("browser-site")
    static = folder / "_static"
    try:
        bm.build(folder, CACHE)
    except bm.Unavailable as why:
        if REQUIRED:
            pytest.fail(f"COURSE_REQUIRE_BROWSER=1 but the browser model cannot be built: {why}")
        pytest.skip(str(why))
    for name in bm.SCRIPTS:
        shutil.copy2(STATIC / name, static / name)
    (folder / "index.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        + "".join(f"<script src='_static/{n}'></script>" for n in bm.SCRIPTS)
        + "</head><body></body></html>", encoding="utf-8")
    return folder


@contextlib.contextmanager
def serve(folder: Path):
    """``folder`` over http on a free loopback port (a model cannot load from file://)."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def chromium_page(origin: str):
    """``(page, tried)``: a headless Chromium page that may load only ``origin``; ``tried`` lists the rest it asked for."""
    import browser_support as bs
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=bs.CHROMIUM, headless=True, args=bs.LAUNCH_ARGS)
        context = browser.new_context(viewport={"width": 1000, "height": 900})
        network = []

        def route(r):
            if r.request.url.startswith((origin + "/", "data:", "blob:", "about:")):
                r.continue_()
            else:
                network.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        try:
            yield page, network
        finally:
            browser.close()


# Runs in the page: the model on one text, then each output compared with the reference's
# float32 bytes (fetched from the same folder): the largest absolute difference per output.
COMPARE = """async ([text, refs]) => {
  const r = await window.courseBrowserModel.run(text);
  const diff = async (name, got) => {
    const want = new Float32Array(await (await fetch(refs[name])).arrayBuffer());
    if (want.length !== got.length) return {name, error: `length ${got.length} vs ${want.length}`};
    let worst = 0;
    for (let i = 0; i < got.length; i++) { const d = Math.abs(got[i] - want[i]); if (!(d <= worst)) worst = d; }
    return {name, worst};
  };
  return {ids: r.ids, tokens: r.tokens, dropped: r.dropped, total: r.total, ms: r.ms,
          diffs: [await diff('hidden', r.hiddenStates), await diff('attentions', r.attentions)]};
}"""


@pytest.mark.browser
@pytest.mark.slow
def test_browser_model_matches_pytorch(site, tokenizer, model):
    texts = [HELD_OUT[0], HELD_OUT[1], long_text(tokenizer, model)]
    wrapped = bm.all_states(model)
    refs = site / "refs"
    refs.mkdir(exist_ok=True)
    with serve(site) as origin, chromium_page(origin) as (page, network):
        page.goto(f"{origin}/index.html")
        assert page.evaluate("() => window.courseBrowserModel.unavailable()") is None
        for k, text in enumerate(texts):
            ids, dropped = python_ids(tokenizer, model, text)
            with torch.no_grad():
                hidden, attentions = wrapped(torch.tensor([ids]), torch.zeros(1, len(ids), dtype=torch.long))
            names = {}
            for name, array in (("hidden", hidden), ("attentions", attentions)):
                (refs / f"{k}-{name}.bin").write_bytes(array.numpy().astype(np.float32).tobytes())
                names[name] = f"refs/{k}-{name}.bin"
            got = page.evaluate(COMPARE, [text, names])
            assert got["ids"] == ids, f"{text[:40]!r}: browser {got['tokens'][:12]} vs {tokenizer.convert_ids_to_tokens(ids)[:12]}"
            assert got["dropped"] == dropped
            for d in got["diffs"]:
                assert "error" not in d, d
                assert d["worst"] <= bm.TOLERANCE, f"{text[:40]!r}: {d['name']} differ by {d['worst']:.2e}"
            print(f"browser model: {len(ids)} tokens, {got['ms']:.0f} ms, largest differences "
                  + ", ".join(f"{d['name']} {d['worst']:.1e}" for d in got["diffs"]))
        # the held-out sentences did reach the edges: [UNK] in the second, a truncation in the third
        assert tokenizer.unk_token_id in python_ids(tokenizer, model, texts[1])[0]
        assert python_ids(tokenizer, model, texts[2])[1] > 0
        timings = page.evaluate("() => window.courseBrowserModel.timings")
        print(f"browser model: download {timings['downloadMs']:.0f} ms, session {timings['sessionMs']:.0f} ms")
    assert network == [], f"the page tried the network: {network[:5]}"


# ------------------------------------------------------------------------------ the built site
SITE = Path(os.environ.get("COURSE_SITE", ROOT / "build" / "site"))
ONLY = [n for n in os.environ.get("COURSE_SITE_ONLY", "").split(",") if n]
SHOTS = Path(os.environ.get("COURSE_SITE_SCREENSHOTS", ROOT / "build" / "screenshots-site"))
SLIDER_BUDGET_MS = 50  # issue 50: a slider move once computed, as the notebook explorers


def pages_with_the_box() -> list[Path]:
    """Lesson pages of the built site that carry the "try your own sentence" script."""
    pages = sorted((SITE / "lessons").glob("*.html")) if (SITE / "lessons").is_dir() else []
    pages = [p for p in pages if not ONLY or p.stem.split("_")[0] in ONLY]
    return [p for p in pages if bm.SCRIPTS[1] in p.read_text(encoding="utf-8")]


@pytest.fixture(scope="module")
def built_pages():
    import browser_support as bs

    reason = bs.chromium_missing_reason()
    if reason is None and not (SITE / "_static" / bm.FOLDER / "model.json").exists():
        reason = f"the site in {SITE} has no browser model (build it with book/build.py; see its 'browser model:' line)"
    if reason is None and not pages_with_the_box():
        reason = f"no page of the site in {SITE} has an explorer the browser model redraws"
    if reason:
        if REQUIRED:
            pytest.fail(f"COURSE_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    return pages_with_the_box()


def _canvas(page, selector: str) -> str:
    return page.evaluate(f"() => document.querySelector({selector!r}).toDataURL()")


def _tokens_drawn(page) -> list[str]:
    """The tokens the reader's explorer shows: the head explorer's row labels (its frame's
    right-aligned upright texts), the layer walk's token menu ("3: bank")."""
    return page.evaluate("""() => {
      const ex = document.querySelector('div.course-explorer-own').courseLive;
      if (['LayerWalkExplorer', 'NeighbourExplorer'].includes(ex.data.explorer)) return ex.data.controls[0].labels.map(l => l.replace(/^\\d+: /, ''));
      const texts = ex.frame().map(i => ex.data.prims[i]).filter(p => p.t === 'text' && p.align === 'right' && !p.rot);
      return texts[texts.length - 1].lines.map(l => l[0]);
    }""")


def neighbours_match_pytorch(page, tokenizer, model, sentence: str) -> None:
    """Lesson 09's explorer (no-op for the others): the nearest tokens the browser names for the
    shown token and layer are PyTorch's nearest (cosines within TOLERANCE of the k-th), and the
    dashed baseline is the lesson's."""
    from helpers.context.widgets import NeighbourExplorer
    from helpers.model.trace import trace_text

    shown = page.evaluate("""() => {
      const ex = document.querySelector('div.course-explorer-own').courseLive;
      const texts = ex.frame().map(i => ex.data.prims[i]).filter(p => p.t === 'text' && !p.rot);
      const lines = texts.map(t => t.lines[0][0]);
      return {explorer: ex.data.explorer, index: ex.index.slice(),
              near: lines.filter(l => /^\\d+: /.test(l)).map(l => +l.split(':')[0]),
              baseline: lines.filter(l => l.startsWith('(dashed: random-pair baseline'))};
    }""")
    if shown["explorer"] != "NeighbourExplorer":
        return
    token, layer = shown["index"]
    ours = NeighbourExplorer(trace_text(tokenizer, model, sentence), token=token, layer=layer)
    row = np.delete(ours._cos[layer, token], token)
    kth = np.sort(row)[::-1][len(shown["near"]) - 1]
    assert len(shown["near"]) == ours.k and token not in shown["near"]
    assert all(ours._cos[layer, token, pos] >= kth - bm.TOLERANCE for pos in shown["near"]), shown
    assert len(shown["baseline"]) == 1, "the lesson's random-pair baseline is not drawn"


@pytest.mark.browser
@pytest.mark.slow
def test_your_own_sentence_redraws_the_explorer(built_pages, tokenizer, model):
    """On each page with the box: nothing of the model loads until asked; a held-out sentence
    redraws the explorer with its own tokens; a slider move redraws within the budget; a text past
    the maximum length says it was truncated; "back" shows the lesson's explorer again."""
    built_pages = [p for p in built_pages if 'class="course-frames"' in p.read_text(encoding="utf-8")]
    if not built_pages:
        pytest.skip("no page of the built site has a precomputed explorer with the box (lesson 04's has its own test)")
    sentence = "Our neighbour's dog barked at the postman twice."
    tokens = tokenizer.convert_ids_to_tokens(python_ids(tokenizer, model, sentence)[0])
    report = []
    SHOTS.mkdir(parents=True, exist_ok=True)
    with serve(SITE) as origin, chromium_page(origin) as (page, network):
        loaded = []
        page.on("response", lambda r: loaded.append((r.url, int(r.headers.get("content-length", 0) or 0))))
        for path in built_pages:
            loaded.clear()
            page.goto(f"{origin}/lessons/{path.name}")
            page.wait_for_selector("form.course-try")
            form = page.locator("form.course-try").first
            assert form.get_attribute("data-unavailable") is None
            assert page.input_value("input.course-try-input").strip(), "the box opens empty, not on the lesson's sentence"
            assert not [u for u, _ in loaded if f"/{bm.FOLDER}/" in u], "the model loaded before the reader asked"
            form.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / f"{path.stem}-try-before.png"))
            page.fill("input.course-try-input", sentence)
            page.click("button.course-try-run")
            page.wait_for_selector("form.course-try[data-state=done], form.course-try[data-state=failed]", timeout=300_000)
            assert form.get_attribute("data-state") == "done", form.get_attribute("data-error")
            downloaded = sum(size for url, size in loaded if f"/{bm.FOLDER}/" in url)
            cold = page.evaluate("() => Object.assign({}, window.courseBrowserModel.timings)")
            assert page.locator("div.course-explorer-own").is_visible()
            assert not page.locator("div.course-explorer").first.is_visible()
            assert _tokens_drawn(page) == tokens  # the reader's sentence, as the Python tokenizer cuts it
            neighbours_match_pytorch(page, tokenizer, model, sentence)
            page.locator("div.course-explorer-own").scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / f"{path.stem}-try-after.png"))
            # slider moves: the input event a drag fires, timed to the end of the redraw
            before = _canvas(page, "div.course-explorer-own canvas")
            moves = page.evaluate("""() => {
              const inputs = [...document.querySelectorAll('div.course-explorer-own input[type=range]')];
              const times = [];
              for (let round = 0; round < 3; round++) inputs.forEach(input => {
                for (let v = 0; v <= +input.max; v++) {
                  input.value = v;
                  const t = performance.now();
                  input.dispatchEvent(new Event('input'));
                  times.push(performance.now() - t);
                }
              });
              inputs.forEach(input => { input.value = 1; input.dispatchEvent(new Event('input')); });
              return times;
            }""")
            assert _canvas(page, "div.course-explorer-own canvas") != before, "the sliders did not change the picture"
            moves = sorted(moves)
            median, worst = moves[len(moves) // 2], moves[-1]
            assert median <= SLIDER_BUDGET_MS, f"a slider move takes {median:.1f} ms (median), over {SLIDER_BUDGET_MS} ms"
            # a second sentence: the model is loaded, only the run and the drawing are left
            page.fill("input.course-try-input", long_text(tokenizer, model))
            page.click("button.course-try-run")
            page.wait_for_function("() => document.querySelector('form.course-try').dataset.dropped > 0", timeout=300_000)
            warm = page.evaluate("() => Object.assign({}, window.courseBrowserModel.timings)")
            limit = max_input_tokens(tokenizer, model)
            note = page.inner_text(".course-try-note")
            assert "truncated" in note and str(limit) in note, note
            page.locator("div.course-explorer-own").scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / f"{path.stem}-try-truncated.png"))
            # about 64 tokens (issue 50: "in about a second on a laptop")
            words = long_text(tokenizer, model).split()
            medium = " ".join(words[:next(k for k in range(1, len(words))
                                          if len(python_ids(tokenizer, model, " ".join(words[:k]))[0]) >= 64)])
            page.fill("input.course-try-input", medium)
            page.click("button.course-try-run")
            page.wait_for_function("() => document.querySelector('form.course-try').dataset.dropped === '0'",
                                   timeout=300_000)
            sixty_four = page.evaluate("() => Object.assign({}, window.courseBrowserModel.timings)")
            page.click("button.course-try-back")
            assert page.locator("div.course-explorer").first.is_visible()
            report.append(f"{path.stem}: downloaded {downloaded / 1e6:.1f} MB on request; first picture "
                          f"{cold['firstPictureMs'] / 1e3:.1f} s cold (download {cold['downloadMs'] / 1e3:.1f} s, "
                          f"session {cold['sessionMs'] / 1e3:.1f} s, run {cold['runMs']:.0f} ms for {len(tokens)} tokens); "
                          f"64 tokens: run {sixty_four['runMs']:.0f} ms, picture {sixty_four['firstPictureMs']:.0f} ms; "
                          f"{limit} tokens: run {warm['runMs'] / 1e3:.1f} s, picture {warm['firstPictureMs'] / 1e3:.1f} s; "
                          f"slider move median {median:.1f} ms, slowest {worst:.1f} ms over {len(moves)} moves")
    (SHOTS / "browser-model.txt").write_text("\n".join(report) + "\n", encoding="utf-8")
    print("\n".join(report))
    assert network == [], f"the site asked the network for {network[:5]}"


@pytest.mark.browser
@pytest.mark.slow
def test_without_webassembly_the_precomputed_explorer_stays_and_says_why(built_pages):
    import browser_support as bs
    from playwright.sync_api import sync_playwright

    path = built_pages[0]
    explorer = 'class="course-frames"' in path.read_text(encoding="utf-8")
    with serve(SITE) as origin, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=bs.CHROMIUM, headless=True, args=bs.LAUNCH_ARGS)
        try:
            page = browser.new_page()
            page.add_init_script("delete window.WebAssembly")
            page.goto(f"{origin}/lessons/{path.name}")
            page.wait_for_selector("form.course-try[data-unavailable]")
            assert "WebAssembly" in page.get_attribute("form.course-try", "data-unavailable")
            assert page.locator("input.course-try-input").is_disabled()
            assert "WebAssembly" in page.inner_text(".course-try-note")
            if explorer:
                page.wait_for_selector("div.course-explorer[data-ready]")  # the precomputed sliders still work
            else:  # lesson 04's box: the picture of the build's examples stays
                assert page.locator("form.course-try").evaluate("f => !f.previousElementSibling.hidden")
            # from disk (file://) a browser does not let the page load the model: the box says so
            page = browser.new_page()
            page.goto(path.resolve().as_uri())
            page.wait_for_selector("form.course-try[data-unavailable]")
            assert "file://" in page.inner_text(".course-try-note")
        finally:
            browser.close()


# ------------------------------------------------------------------------------ lesson 04's head
HEAD_TAG = re.compile(r'<script type="application/json" class="course-browser-head" data-picture="([0-9a-f]{64})">'
                      r"(.*?)</script>", re.S)


def head_from_record(head: dict):
    """The lesson's trained head, rebuilt in PyTorch from what the page carries (float32 bytes)."""
    import base64

    from helpers.classify.compute import LinearHead

    def array(name):
        return torch.from_numpy(np.frombuffer(base64.b64decode(head[name]), dtype="<f4").copy())

    d, c = head["hidden"], head["classes"]
    rebuilt = LinearHead(d, c, mean=array("mu"), std=array("sigma")).eval()
    with torch.no_grad():
        rebuilt.classifier.weight.copy_(array("weight").reshape(c, d))
        rebuilt.classifier.bias.copy_(array("bias"))
    return rebuilt


def pytorch_logits(tokenizer, model, head: dict, rebuilt, text: str) -> np.ndarray:
    """PyTorch's head on PyTorch's vector of ``text``, as the notebook's box computes it."""
    from helpers.classify.compute import extract_features

    feats = extract_features(tokenizer, model, [text], max_length=max_input_tokens(tokenizer, model), progress=False)
    with torch.no_grad():
        return rebuilt(feats.layer(head["layer"], head["pooling"]))[0].numpy()


def test_attach_gives_lesson_04s_box_its_head_when_it_reads_the_browsers_model(tmp_path):
    sha = "ab" * 32
    record = {"kind": "multiples", "explorer": "LogitsBox", "note": "n",
              "browser": {"hidden": 8, "layers": 2, "max_length": 16, "names": ["a", "b"], "weight": "x</script>"}}
    (tmp_path / "lessons").mkdir()
    (tmp_path / "_static" / bm.FOLDER).mkdir(parents=True)
    info = {"model": "m", "onnx": {"bytes": 1}, "runtime": {"bytes": 2}, "hidden": 8, "layers": 2, "max_length": 16}
    (tmp_path / "_static" / bm.FOLDER / "model.json").write_text(json.dumps(info))
    frames = tmp_path / "frames"
    for stem, hidden in (("04_box", 8), ("05_other_model", 16)):
        (frames / stem).mkdir(parents=True)
        (frames / stem / f"{sha}.json").write_text(json.dumps({**record, "browser": {**record["browser"], "hidden": hidden}}))
        (tmp_path / "lessons" / f"{stem}.html").write_text(
            f'<html><head></head><body><figure><img src="../_images/{sha}.png" /></figure></body></html>')
    assert bm.attach(tmp_path, frames) == {"pages": 1, "explorers": 1}
    page = (tmp_path / "lessons" / "04_box.html").read_text()
    found = HEAD_TAG.search(page)
    assert found and found[1] == sha and json.loads(found[2])["names"] == ["a", "b"]
    assert "</script>" not in found[2]  # the head's text cannot close its script tag
    assert all(f'src="../_static/{name}"' in page for name in ("course-explorer.js", *bm.SCRIPTS))
    assert bm.SCRIPTS[1] not in (tmp_path / "lessons" / "05_other_model.html").read_text()


@pytest.mark.browser
@pytest.mark.slow
def test_your_own_sentence_is_classified_by_the_lessons_head(built_pages, tokenizer, model):
    """Lesson 04's box on the built site: the reader's sentence gets the logits and class id of the
    head the lesson trained (PyTorch's head on PyTorch's vector, within browser_model.LOGIT_TOLERANCE),
    drawn in place of the build's examples; a second sentence redraws it; back shows the examples."""
    pages = [p for p in built_pages if HEAD_TAG.search(p.read_text(encoding="utf-8"))]
    if not pages:
        if REQUIRED:
            pytest.fail("COURSE_REQUIRE_BROWSER=1 but no page of the built site carries lesson 04's head")
        pytest.skip(f"no page of the site in {SITE} carries a trained head (build lesson 04)")
    report = []
    SHOTS.mkdir(parents=True, exist_ok=True)
    with serve(SITE) as origin, chromium_page(origin) as (page, network):
        for path in pages:
            head = json.loads(HEAD_TAG.search(path.read_text(encoding="utf-8"))[2])
            rebuilt = head_from_record(head)
            # the head the page carries is the lesson's: it gives back the logits the lesson's run drew
            for text, drawn in head["examples"].items():
                np.testing.assert_allclose(pytorch_logits(tokenizer, model, head, rebuilt, text), drawn, atol=1e-5)
            page.goto(f"{origin}/lessons/{path.name}")
            page.wait_for_selector("form.course-try")
            assert page.input_value("input.course-try-input") == head["sentence"]
            form = page.locator("form.course-try").first
            form.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / f"{path.stem}-try-before.png"))
            texts = ["Please put eggs and milk on my shopping list", "How much money is left in my savings account?",
                     HELD_OUT[1], long_text(tokenizer, model)]
            pictures, warm, worst = [], [], 0.0
            for k, text in enumerate(texts):
                page.fill("input.course-try-input", text)
                page.click("button.course-try-run")
                page.wait_for_function("() => ['done', 'failed'].includes(document.querySelector('form.course-try')"
                                       ".dataset.state)", timeout=300_000)
                assert form.get_attribute("data-state") == "done", form.get_attribute("data-error")
                got = np.array(page.evaluate("() => document.querySelector('div.course-explorer-own').courseLogits"))
                want = pytorch_logits(tokenizer, model, head, rebuilt, text)
                worst = max(worst, float(np.abs(got - want).max()))
                assert np.abs(got - want).max() <= bm.LOGIT_TOLERANCE, f"{text[:40]!r}: {got} vs {want}"
                pred = int(want.argmax())
                assert int(form.get_attribute("data-prediction")) == pred
                assert head["names"][pred] in page.inner_text(".course-try-note")
                assert page.locator("div.course-explorer-own").is_visible()
                assert not page.locator("form.course-try").evaluate("f => f.previousElementSibling.checkVisibility()")
                pictures.append(_canvas(page, "div.course-explorer-own canvas"))
                timings = page.evaluate("() => Object.assign({}, window.courseBrowserModel.timings)")
                if k == 0:
                    cold = timings
                    page.locator("div.course-explorer-own").scroll_into_view_if_needed()
                    page.screenshot(path=str(SHOTS / f"{path.stem}-try-after.png"))
                else:
                    warm.append(timings["firstPictureMs"])
            assert len(set(pictures)) == len(pictures), "a new sentence did not change the picture"
            assert int(form.get_attribute("data-dropped")) > 0  # the last one was truncated, and the note says so
            assert "truncated" in page.inner_text(".course-try-note")
            page.click("button.course-try-back")
            assert page.locator("form.course-try").evaluate("f => f.previousElementSibling.checkVisibility()")
            warm.sort()
            report.append(f"{path.stem}: first picture {cold['firstPictureMs'] / 1e3:.1f} s cold (download "
                          f"{cold['downloadMs'] / 1e3:.1f} s, session {cold['sessionMs'] / 1e3:.1f} s, run "
                          f"{cold['runMs']:.0f} ms); next sentences {', '.join(f'{t:.0f}' for t in warm)} ms "
                          f"(the last one {max_input_tokens(tokenizer, model)} tokens); largest logit difference "
                          f"{worst:.1e}")
    (SHOTS / "browser-model-04.txt").write_text("\n".join(report) + "\n", encoding="utf-8")
    print("\n".join(report))
    assert network == [], f"the site asked the network for {network[:5]}"
