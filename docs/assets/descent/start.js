// descent start: when the site's scripts do their start-up work (decision 0025).
//
// Material's own start-up runs at DOMContentLoaded and asks the page for sizes (its back-to-top
// button, its table of contents, every .md-ellipsis). Whatever our scripts changed before that
// question turns it into a restyle and relayout of the whole page inside Material's one long task:
// on Part 3 that task took 95 ms unthrottled, about 380 ms on Lighthouse's phone (4x slower CPU),
// of which our scripts' own start was 27 ms and the restyle they caused 24 ms.
//
// So each script of ours hands its start to descentStart(fn): fn runs in a task of its own after
// DOMContentLoaded's listeners (Material's among them), one task per script, in the order the
// scripts were joined (descent.site.bundle). descentEachPage(fn) runs fn, again in a task of its
// own, for every later page that Material's instant navigation swaps in (its document$ stream; the
// first value it sends is the page the scripts started on, which descentStart already covers).
// Under file: Material's document$ never sends a value: descentStart alone binds the page.
// A classic script (file:// safe), first in the site's one script.
(() => {
"use strict";

// Once every start queued for a page has run, <html data-descent-started> names the page's path:
// its scripts are bound (the browser tests wait on it before they act on a page).
let pending = 0;
const later = (fn) => {
  pending += 1;
  setTimeout(() => {
    try {
      fn();
    } finally {
      pending -= 1;
      if (pending === 0) document.documentElement.dataset.descentStarted = location.pathname;
    }
  }, 0);
};

window.descentStart = (fn) => {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => later(fn), { once: true });
  else later(fn);
};

window.descentEachPage = (fn) => {
  const doc$ = window.document$;
  if (!doc$ || typeof doc$.subscribe !== "function") return;
  let first = true;
  doc$.subscribe(() => {
    if (first) {
      first = false;
      return;
    }
    later(fn);
  });
};
})();
