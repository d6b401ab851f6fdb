// descent: wide tables that scroll sideways are reachable by keyboard.
//
// Material wraps every content table in .md-typeset__scrollwrap (overflow: auto). When the table is
// wider than the column, that wrapper is a scrollable region with nothing focusable in it, and a
// keyboard user cannot scroll it (axe-core rule scrollable-region-focusable; WCAG 2.1.1). Such a
// wrapper gets tabindex="0" and a name (role="region"); others are left alone (no extra tab stops).
// Runs on load, on every page Material's instant navigation swaps in (document$), and on resize.
// tests/browser/test_accessibility.py is the check.
(() => {
  "use strict";
  const LABEL = "Table (scrolls sideways)";

  function fix() {
    // Read every wrapper's size first, then write: reading after a write forces a fresh layout of
    // the whole page each time, which on a reference page of forty tables took seconds of main
    // thread under Lighthouse's mobile throttling.
    const wraps = [...document.querySelectorAll(".md-typeset__scrollwrap")];
    const scrolls = wraps.map((el) => el.scrollWidth > el.clientWidth + 1);
    wraps.forEach((el, i) => {
      if (scrolls[i] && !el.hasAttribute("tabindex")) {
        el.tabIndex = 0;
        el.setAttribute("role", "region");
        const caption = el.querySelector("caption");
        el.setAttribute("aria-label", caption ? caption.textContent.trim() : LABEL);
        el.dataset.descentScroll = "1";
      } else if (!scrolls[i] && el.dataset.descentScroll) {
        el.removeAttribute("tabindex");
        el.removeAttribute("role");
        el.removeAttribute("aria-label");
        delete el.dataset.descentScroll;
      }
    });
  }

  const later = () => requestAnimationFrame(fix);
  if (document.readyState === "complete") later();
  else addEventListener("load", later, { once: true });
  const doc$ = window.document$;
  if (doc$ && typeof doc$.subscribe === "function") doc$.subscribe(later);
  let t = 0;
  addEventListener("resize", () => {
    clearTimeout(t);
    t = setTimeout(fix, 150);
  });
})();
