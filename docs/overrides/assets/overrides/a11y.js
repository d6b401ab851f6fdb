// descent: wide tables that scroll sideways are reachable by keyboard.
//
// Material wraps every content table in .md-typeset__scrollwrap (overflow: auto). When the table is
// wider than the column, that wrapper is a scrollable region with nothing focusable in it, and a
// keyboard user cannot scroll it (axe-core rule scrollable-region-focusable; WCAG 2.1.1). Such a
// wrapper gets tabindex="0" and a name (role="region"); others are left alone (no extra tab stops).
//
// Cost: the article's off-screen blocks are skipped by the browser (content-visibility: auto in
// site.css), and measuring every table at once would lay them all out again. So the tables near the
// viewport are measured as they come near (an IntersectionObserver), and the rest a few at a time
// while the browser is idle; each measure lays out that one table only. Runs on every page Material's
// instant navigation swaps in (document$, which also announces the first page), and again after a
// resize. When every table is measured, <html> carries data-descent-tables="measured".
// tests/browser/test_accessibility.py and test_layout_cost.py are the checks.
(() => {
  "use strict";
  const LABEL = "Table (scrolls sideways)";
  const idle = window.requestIdleCallback || ((cb) => setTimeout(() => cb({ timeRemaining: () => 8 }), 50));
  let pending = new Set();
  let observer = null;
  let draining = false; // one idle loop at a time, however often start() runs (resize, navigation)

  function fix(el) {
    pending.delete(el);
    // The table's own width: asking a descendant lays out just this (possibly skipped) block.
    const inner = el.querySelector("table") || el.firstElementChild;
    const scrolls = !!inner && inner.getBoundingClientRect().width > el.clientWidth + 1;
    if (scrolls && !el.hasAttribute("tabindex")) {
      el.tabIndex = 0;
      el.setAttribute("role", "region");
      const caption = el.querySelector("caption");
      el.setAttribute("aria-label", caption ? caption.textContent.trim() : LABEL);
      el.dataset.descentScroll = "1";
    } else if (!scrolls && el.dataset.descentScroll) {
      el.removeAttribute("tabindex");
      el.removeAttribute("role");
      el.removeAttribute("aria-label");
      delete el.dataset.descentScroll;
    }
  }

  // A slice of idle time stays well under the 50 ms that makes a task "long" (an idle deadline can be
  // 50 ms, and a measure that starts just before it runs past it).
  const SLICE_MS = 12;
  function drain(deadline) {
    // At least one table per call, so a busy page (the deadline's timeout, no idle time) still ends.
    const stop = performance.now() + Math.min(SLICE_MS, deadline.timeRemaining());
    for (const el of pending) {
      if (el.isConnected) fix(el);
      else pending.delete(el);
      if (performance.now() >= stop) break;
    }
    draining = pending.size > 0;
    if (draining) idle(drain, { timeout: 2000 });
    else document.documentElement.dataset.descentTables = "measured";
  }

  function start() {
    if (observer) observer.disconnect();
    const wraps = [...document.querySelectorAll(".md-typeset__scrollwrap")];
    pending = new Set(wraps);
    document.documentElement.dataset.descentTables = "measuring";
    if ("IntersectionObserver" in window) {
      observer = new IntersectionObserver(
        (entries) => entries.forEach((e) => e.isIntersecting && pending.has(e.target) && fix(e.target)),
        { rootMargin: "100% 0px" },
      );
      wraps.forEach((el) => observer.observe(el));
    }
    if (!draining) {
      draining = true;
      idle(drain, { timeout: 2000 });
    }
  }

  const doc$ = window.document$;
  if (doc$ && typeof doc$.subscribe === "function") doc$.subscribe(() => requestAnimationFrame(start));
  else if (document.readyState === "complete") requestAnimationFrame(start);
  else addEventListener("load", () => requestAnimationFrame(start), { once: true });
  let t = 0;
  addEventListener("resize", () => {
    clearTimeout(t);
    t = setTimeout(start, 150);
  });
})();
