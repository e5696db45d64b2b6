// Typeset TeX to SVG once, at build time, with MathJax 3 running in Node (book/postprocess.py).
// Usage: node render_math.js ES5_FOLDER < items.json > out.json
//   items.json: [[tex, display], ...]; out.json: {"svg": [html, ...], "css": "..."}
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
  svg: {fontCache: 'local'},
  startup: {typeset: false},
};
require(es5 + '/startup.js');
MathJax.startup.promise.then(() => {
  const items = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const adaptor = MathJax.startup.adaptor;
  const svg = items.map(([tex, display]) => adaptor.outerHTML(MathJax.tex2svg(tex, {display})));
  const css = adaptor.textContent(MathJax.svgStylesheet());
  process.stdout.write(JSON.stringify({svg, css}));
}).catch((err) => {
  console.error(err);
  process.exit(1);
});
