// Typeset TeX to SVG once, at build time, with MathJax 3 running in Node (book/postprocess.py).
// Usage: node render_math.js ES5_FOLDER < pages.json > out.json
//   pages.json: [[[tex, display], ...], ...] (one list per page)
//   out.json: {"svg": [[html, ...], ...], "defs": [html, ...], "css": "..."}
// Each page's glyph shapes are defined once in its "defs" (MathJax's global font cache) and
// the formulas refer to them, instead of every formula carrying its own copies.
// ES5_FOLDER is the MathJax es5/ folder of the django-static-mathjax wheel: no npm, no network.
const es5 = process.argv[2];
global.MathJax = {
  loader: {
    paths: {mathjax: es5},
    require: require,
    load: ['adaptors/liteDOM', 'input/tex', '[tex]/textmacros', 'output/svg'],
  },
  // the same TeX setup as the site had in the browser (conf.py): textmacros for \text{a\_b}
  tex: {packages: {'[+]': ['textmacros']}},
  svg: {fontCache: 'global'},
  startup: {typeset: false},
};
require(es5 + '/startup.js');
MathJax.startup.promise.then(() => {
  const pages = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const adaptor = MathJax.startup.adaptor;
  const cache = MathJax.startup.output.fontCache;
  const svg = [], defs = [];
  for (const items of pages) {
    cache.clearCache();
    svg.push(items.map(([tex, display]) => adaptor.outerHTML(MathJax.tex2svg(tex, {display}))));
    defs.push(adaptor.outerHTML(cache.getCache()));
  }
  const css = adaptor.textContent(MathJax.svgStylesheet());
  process.stdout.write(JSON.stringify({svg, defs, css}));
}).catch((err) => {
  console.error(err);
  process.exit(1);
});
