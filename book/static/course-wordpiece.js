/* BERT's tokenizer in JavaScript, for the model that runs in the reader's browser
   (book/browser_model.py writes the vocabulary and the settings into model.json).

   The same steps as Hugging Face's BertTokenizer / BertNormalizer + BertPreTokenizer + WordPiece:
   1. clean the text: drop NUL, U+FFFD and control characters, every white space becomes a space;
   2. put spaces around CJK ideographs (each becomes a word of its own);
   3. strip accents (NFD, then drop combining marks) and lower-case, as the settings say;
   4. split on white space, and split every punctuation character off as a word of its own;
   5. WordPiece: each word greedily as the longest vocabulary entries, continuations with "##";
      a word with no such split, or longer than max_chars characters, becomes [UNK];
   The special tokens written in the text ("[MASK]") stay whole, as Python's tokenizer keeps them.
   6. [CLS] tokens [SEP], cut to the model's maximum length (the end is dropped, [SEP] kept),
      with the number of tokens dropped reported.
   tests/test_browser_model.py checks it against the Python tokenizer, in Node and in Chromium.
   No dependencies; works in a browser (window.courseWordPiece) and in Node (require). */
(function (root, factory) {
  'use strict';
  if (typeof module === 'object' && module.exports) module.exports = factory();
  else root.courseWordPiece = factory();
})(typeof self !== 'undefined' ? self : this, function () {
  'use strict';

  var CONTROL = /^\p{C}$/u;
  var SPACE = /^\p{White_Space}$/u;
  var PUNCT = /^\p{P}$/u;
  var MARK = /^\p{Mn}$/u;

  function isCJK(cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
      (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
      (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
  }

  function isPunct(ch) {
    var cp = ch.codePointAt(0);
    return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126) ||
      PUNCT.test(ch);
  }

  function isSpace(ch) { return ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r' || SPACE.test(ch); }

  function normalise(text, s) {
    var out = [];
    Array.from(text).forEach(function (ch) {
      var cp = ch.codePointAt(0);
      if (s.clean_text) {
        if (cp === 0 || cp === 0xFFFD) return;
        if (isSpace(ch)) { out.push(' '); return; }
        if (CONTROL.test(ch)) return;
      }
      if (s.chinese_chars && isCJK(cp)) { out.push(' ', ch, ' '); return; }
      out.push(ch);
    });
    text = out.join('');
    if (s.strip_accents) text = Array.from(text.normalize('NFD')).filter(function (ch) { return !MARK.test(ch); }).join('');
    if (s.lowercase) text = text.toLowerCase();
    return text;
  }

  function words(text) {
    var found = [], current = [];
    function flush() { if (current.length) { found.push(current.join('')); current = []; } }
    Array.from(text).forEach(function (ch) {
      if (isSpace(ch)) flush();
      else if (isPunct(ch)) { flush(); found.push(ch); }
      else current.push(ch);
    });
    flush();
    return found;
  }

  function Tokenizer(settings) {
    this.s = settings;
    this.ids = new Map();
    var ids = this.ids;
    settings.vocab.forEach(function (word, i) { if (word !== null && !ids.has(word)) ids.set(word, i); });
    ['cls', 'sep', 'unk'].forEach(function (name) {
      if (!ids.has(settings[name])) throw new Error('the vocabulary has no ' + settings[name] + ' token');
    });
  }

  Tokenizer.prototype.wordpiece = function (word) {
    var chars = Array.from(word), s = this.s;
    if (chars.length > s.max_chars) return [s.unk];
    var pieces = [], start = 0;
    while (start < chars.length) {
      var end = chars.length, piece = null;
      while (start < end) {
        var sub = (start > 0 ? s.prefix : '') + chars.slice(start, end).join('');
        if (this.ids.has(sub)) { piece = sub; break; }
        end -= 1;
      }
      if (piece === null) return [s.unk];
      pieces.push(piece);
      start = end;
    }
    return pieces;
  };

  /* The text cut around the special tokens written in it ("[MASK]" stays one token, as in Python). */
  Tokenizer.prototype.pieces = function (text) {
    var specials = (this.s.specials || []).filter(function (t) { return t; });
    if (!specials.length) return [{ text: text, special: false }];
    var escaped = specials.slice().sort(function (a, b) { return b.length - a.length; })
      .map(function (t) { return t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); });
    var parts = [], pattern = new RegExp(escaped.join('|'), 'g'), last = 0, m;
    while ((m = pattern.exec(text)) !== null) {
      if (m.index > last) parts.push({ text: text.slice(last, m.index), special: false });
      parts.push({ text: m[0], special: true });
      last = m.index + m[0].length;
    }
    if (last < text.length) parts.push({ text: text.slice(last), special: false });
    return parts;
  };

  /* {tokens, ids, dropped, total}: the model's input for one sentence, at most maxLength tokens
     with [CLS] and [SEP]; dropped counts the tokens cut from the end (total: before the cut). */
  Tokenizer.prototype.encode = function (text, maxLength) {
    var self = this, s = this.s, tokens = [];
    this.pieces(String(text)).forEach(function (part) {
      if (part.special) { tokens.push(part.text); return; }
      words(normalise(part.text, s)).forEach(function (word) {
        Array.prototype.push.apply(tokens, self.wordpiece(word));
      });
    });
    var total = tokens.length + 2, room = Math.max(0, maxLength - 2);
    var kept = [s.cls].concat(tokens.slice(0, room), [s.sep]);
    return {
      tokens: kept,
      ids: kept.map(function (t) { return self.ids.get(t); }),
      dropped: Math.max(0, total - maxLength),
      total: total
    };
  };

  return { Tokenizer: Tokenizer, normalise: normalise, words: words };
});
