// descent: wide tables that scroll sideways are reachable by keyboard.
//
// Every content table sits in .md-typeset__scrollwrap (overflow: auto; the build writes Material's
// wrapper, descent.site.tables). When the table is wider than the column, that wrapper is a
// scrollable region with nothing focusable in it, and a keyboard user cannot scroll it (axe-core rule scrollable-region-focusable; WCAG 2.1.1). Such a
// wrapper gets tabindex="0" and a name (role="region"); a table that fits gets no tab stop.
//
// Cost: nothing here asks the browser for a size it has not computed. The article's blocks far below
// the screen are skipped until they come near it (content-visibility: auto in site.css), and asking
// a table's width lays its block out on the spot: on a throttled phone one table of formulas took
// 130 ms. So a ResizeObserver reports each table's width (and its wrapper's) when the browser lays it
// out for drawing, and a table far down the page starts as a region that scrolls: if it fits, it
// loses the tab stop when it is drawn. A keyboard user moving down the page brings the tables ahead
// near the screen, where they are drawn and measured before focus reaches them; a table that was
// never drawn keeps its tab stop, which costs one extra stop and never a table out of reach. The
// same observer follows resizes and the pages Material's instant navigation swaps in (document$,
// which also announces the first page).
// tests/browser/test_accessibility.py and test_layout_cost.py are the checks.
(() => {
  "use strict";
  const LABEL = "Table (scrolls sideways)";
  let observer = null;

  function setScrolls(wrap, scrolls) {
    if (scrolls && !wrap.dataset.descentScroll) {
      wrap.tabIndex = 0;
      wrap.setAttribute("role", "region");
      const caption = wrap.querySelector("caption");
      wrap.setAttribute("aria-label", caption ? caption.textContent.trim() : LABEL);
      wrap.dataset.descentScroll = "1";
    } else if (!scrolls && wrap.dataset.descentScroll) {
      wrap.removeAttribute("tabindex");
      wrap.removeAttribute("role");
      wrap.removeAttribute("aria-label");
      delete wrap.dataset.descentScroll;
    }
  }

  // The sizes come with the observer's reports (computed for drawing); nothing is read from the page.
  const sizes = new WeakMap(); // wrapper -> { wrap: its width, table: the width of what it scrolls }
  function measured(entries) {
    const changed = new Set();
    for (const entry of entries) {
      const isWrap = entry.target.classList.contains("md-typeset__scrollwrap");
      const wrap = isWrap ? entry.target : entry.target.parentElement;
      // The wrapper's room is its content box; what it scrolls counts with its padding (border box).
      const box = !isWrap && entry.borderBoxSize && entry.borderBoxSize[0];
      const size = sizes.get(wrap) || {};
      size[isWrap ? "wrap" : "table"] = box ? box.inlineSize : entry.contentRect.width;
      sizes.set(wrap, size);
      changed.add(wrap);
    }
    // 0: not laid out yet (a skipped block is first reported with no size): it keeps its tab stop.
    changed.forEach((wrap) => {
      const { wrap: room, table } = sizes.get(wrap);
      if (room > 0 && table > 0) setScrolls(wrap, table > room + 1);
    });
  }

  function start() {
    if (observer) observer.disconnect();
    const wraps = [...document.querySelectorAll(".md-typeset__scrollwrap")];
    const canObserve = "ResizeObserver" in window;
    if (canObserve) observer = new ResizeObserver(measured);
    for (const wrap of wraps) {
      // A table far down the page (in a block the browser skips) is taken to scroll until it is drawn;
      // the restyle that brings waits for the drawing too. One near the screen is drawn in the next
      // frame, and the observer's first report decides.
      if (!canObserve || wrap.closest(".descent-far")) setScrolls(wrap, true);
      // What scrolls is the wrapper's one child (Material's .md-typeset__table, padding included).
      if (canObserve && wrap.firstElementChild) {
        observer.observe(wrap);
        observer.observe(wrap.firstElementChild);
      }
    }
  }

  const doc$ = window.document$;
  if (doc$ && typeof doc$.subscribe === "function") doc$.subscribe(() => requestAnimationFrame(start));
  else if (document.readyState !== "loading") start();
  else addEventListener("DOMContentLoaded", start, { once: true });
})();
