/* The course website's page behaviour (book/conf.py loads it on every page; no dependencies).
   A box that is wider than the column (a table, a printed line, a line of code, a formula)
   scrolls sideways on its own; this marks it so that it shows a hint: its right edge fades and
   a line under it says so, until it is scrolled to the end. */
(function () {
  'use strict';
  var BOXES = '.course-scroll, div.cell_output pre, div.cell_input pre, div.math, div.course-math';

  function mark(box, inline) {
    var over = box.scrollWidth > box.clientWidth + 1;
    var end = box.scrollLeft + box.clientWidth >= box.scrollWidth - 1;
    box.classList.toggle('course-scrolls', over);
    box.classList.toggle('course-scrolled-end', over && end);
    if (inline) return;  // an inline formula fades at its edge; a line under it would split its paragraph
    var hint = box.nextElementSibling;
    var has = hint && hint.classList.contains('course-scroll-hint');
    if (over && !has) {
      hint = document.createElement('div');
      hint.className = 'course-scroll-hint';
      hint.setAttribute('aria-hidden', 'true');
      hint.textContent = 'wider than the page: scroll sideways \u2192';
      box.parentNode.insertBefore(hint, box.nextSibling);
    } else if (!over && has) {
      hint.parentNode.removeChild(hint);
    }
  }

  function markAll() {
    document.querySelectorAll('span.math, span.course-math').forEach(function (box) {
      mark(box, true);
      if (!box.courseScrollWatched) {
        box.courseScrollWatched = true;
        box.addEventListener('scroll', function () { mark(box, true); }, { passive: true });
      }
    });
    document.querySelectorAll(BOXES).forEach(function (box) {
      if (box.parentElement && box.parentElement.closest(BOXES)) return;  // an inner box: its outer one scrolls
      mark(box);
      if (!box.courseScrollWatched) {
        box.courseScrollWatched = true;
        box.addEventListener('scroll', function () { mark(box); }, { passive: true });
      }
    });
  }

  var timer = null;
  window.addEventListener('resize', function () {
    clearTimeout(timer);
    timer = setTimeout(markAll, 150);
  });
  // a table's "show the intervals" switch makes it wider or narrower
  document.addEventListener('change', function (e) {
    if (e.target && e.target.classList && e.target.classList.contains('course-ci-toggle')) markAll();
  });
  if (document.readyState !== 'loading') markAll();
  else document.addEventListener('DOMContentLoaded', markAll);
  window.addEventListener('load', markAll);  // pictures and fonts change widths
  window.courseScroll = { mark: markAll };
})();
