// descent lazy: draws what the build kept out of the page's DOM (descent.site.lazy).
//
// The body of a closed <details>, and a long table past the first screen, arrive inside
// <noscript class="descent-lazy">: markup without JavaScript, one text node with it. This script
// puts the markup in place (parsed from that text, or moved, when Material's instant navigation
// brought the page through a DOMParser, which parses <noscript> as markup).
//
// A table (descent-lazy--near) is drawn when its block comes within one and a half screens of the
// viewport (an IntersectionObserver), and the rest one per idle moment (requestIdleCallback) from
// the reader's first scroll, key, pointer or touch, or ten seconds after the load, so that a screen
// reader's list of tables and the browser's find see them all; whatever is drawn off screen lies in
// a block the browser skips (content-visibility) or below the reader, so nothing on screen moves. A closed box's body is
// drawn when:
//   * the box opens (a click on its summary, or the toggle event when a script opens it);
//   * the reader searches the page (Ctrl/Cmd+F, F3: the browser's find then sees every body, and
//     opens a closed box that holds a match) or prints it;
//   * the address points inside a body (#id, on arrival and on every hash change): the box is
//     drawn, opened and the target scrolled into view;
//   * another script asks: window.descentLazy.draw(element) draws every body inside element (or the
//     whole page); explain.js does it before it copies a number's entry into its dialog.
// A classic script (file:// safe), joined into the site's one script (descent.site.bundle).
(() => {
"use strict";

const SELECTOR = "noscript.descent-lazy";

// A far widget's controls (descent-lazy--form: descent.site.lazy.lazy_far_forms): once drawn, the
// widget hears "descent:drawn" (bubbling), and widgets.js and share.js bind it.
const FORM = "descent-lazy--form";

function drawOne(ns) {
  if (!ns.isConnected) return;
  const widget = ns.classList.contains(FORM) ? ns.closest(".descent-widget") : null;
  let body;
  if (ns.firstElementChild) {
    body = document.createDocumentFragment();
    body.append(...ns.childNodes);
  } else {
    const t = document.createElement("template");
    t.innerHTML = ns.textContent;
    body = t.content;
  }
  ns.replaceWith(body);
  if (widget) widget.dispatchEvent(new CustomEvent("descent:drawn", { bubbles: true }));
}

function draw(root) {
  const scope = root && root.querySelectorAll ? root : document;
  for (const ns of Array.from(scope.querySelectorAll(SELECTOR))) drawOne(ns);
}

// The element an id names, drawing the body that holds it first.
function reveal(id) {
  if (!id) return null;
  let el = document.getElementById(id);
  if (el) return el;
  const needle = `id="${id.replace(/&/g, "&amp;").replace(/"/g, "&quot;")}"`;
  for (const ns of document.querySelectorAll(SELECTOR)) {
    if (ns.textContent.includes(needle) || (ns.firstElementChild && ns.querySelector(`[id="${CSS.escape(id)}"]`))) {
      const box = ns.parentElement;
      drawOne(ns);
      el = document.getElementById(id);
      if (el) {
        if (box && box.tagName === "DETAILS") box.open = true;
        return el;
      }
    }
  }
  return null;
}

function onHash() {
  let id;
  try {
    id = decodeURIComponent(location.hash.slice(1));
  } catch {
    return;
  }
  if (!id || document.getElementById(id)) return;
  const el = reveal(id);
  if (el) el.scrollIntoView();
}

// Drawn before the click opens the box, so it opens on its body (the toggle event comes a frame later).
document.addEventListener("click", (ev) => {
  const summary = ev.target.closest && ev.target.closest("summary");
  const box = summary && summary.parentElement;
  if (!box || box.tagName !== "DETAILS" || box.open) return;
  for (const ns of Array.from(box.children)) if (ns.matches(SELECTOR)) drawOne(ns);
}, true);

document.addEventListener("toggle", (ev) => {
  const box = ev.target;
  if (box.tagName !== "DETAILS" || !box.open) return;
  for (const ns of Array.from(box.children)) if (ns.matches(SELECTOR)) drawOne(ns);
}, true);

window.addEventListener("keydown", (ev) => {
  const find = ((ev.ctrlKey || ev.metaKey) && !ev.altKey && (ev.key === "f" || ev.key === "F")) || ev.key === "F3";
  if (find) draw(document);
}, true);

window.addEventListener("beforeprint", () => draw(document));
window.addEventListener("hashchange", onHash);

window.descentLazy = { draw, reveal };

const NEAR = "noscript.descent-lazy--near";
let seen = null;

function watchNear() {
  const all = Array.from(document.querySelectorAll(NEAR));
  if (!all.length) return;
  if (!("IntersectionObserver" in window)) {
    for (const ns of all) drawOne(ns);
    return;
  }
  if (seen) seen.disconnect();
  const of = new Map();
  seen = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (!e.isIntersecting) continue;
      seen.unobserve(e.target);
      for (const ns of of.get(e.target) || []) drawOne(ns);
    }
  }, { rootMargin: "150% 0px" });
  for (const ns of all) {
    const block = ns.closest(".descent-far, .descent-widget") || ns.parentElement;
    if (!of.has(block)) {
      of.set(block, []);
      seen.observe(block);
    }
    of.get(block).push(ns);
  }
}

// The tables not drawn yet, one per idle moment, in page order: from the reader's first scroll, key,
// pointer or touch, or ten seconds after the load, whichever comes first (not at once: each table
// is a task of up to 100 ms on a slow phone, and the page's first seconds belong to the reader).
const REST_AFTER_MS = 10000;
let resting = 0;
function drawRest() {
  clearTimeout(resting);
  resting = setTimeout(drawWhenIdle, REST_AFTER_MS);
  const go = () => {
    clearTimeout(resting);
    for (const t of ["scroll", "keydown", "pointerdown", "touchstart", "wheel"]) removeEventListener(t, go, true);
    drawWhenIdle();
  };
  for (const t of ["scroll", "keydown", "pointerdown", "touchstart", "wheel"]) addEventListener(t, go, { capture: true, passive: true, once: true });
}

function drawWhenIdle() {
  const idle = window.requestIdleCallback || ((fn) => setTimeout(() => fn({ timeRemaining: () => 8 }), 50));
  const step = (deadline) => {
    const next = document.querySelector(NEAR);
    if (!next) return;
    if (deadline.timeRemaining() > 4) drawOne(next);
    idle(step, { timeout: 2000 });
  };
  idle(step, { timeout: 2000 });
}

// A widget past the first blocks arrives skipped (descent.site.blocks marks it descent-far; site.css:
// the browser neither styles nor lays it out until it nears the screen), so the page's load does
// not pay for widgets no one sees yet. Once the page has loaded they are drawn in page order, one
// per frame (a task of a few milliseconds each, not one long one), so that a tool that reads their
// controls' boxes without drawing them first (Lighthouse's accessibility audit) finds each where a
// reader does, not piled at its block's corner. Not per idle moment: on a busy phone an idle
// moment long enough may not come before such a tool looks.
const FAR_WIDGET = ".md-content__inner > .descent-widget.descent-far";
function drawWidgets() {
  const next = document.querySelector(FAR_WIDGET);
  if (!next) return;
  for (const ns of Array.from(next.querySelectorAll(`noscript.${FORM}`))) drawOne(ns);
  next.classList.remove("descent-far");
  requestAnimationFrame(() => setTimeout(drawWidgets, 0));
}

function afterLoad() {
  drawRest();
  setTimeout(drawWidgets, 0);
}

function start() {
  watchNear();
  if (document.readyState === "complete") afterLoad();
  else window.addEventListener("load", afterLoad, { once: true });
  onHash();
}

// start.js: each in a task of its own, after Material's start-up (decision 0025). A page reached by
// instant navigation: watch its tables, draw the rest when idle.
window.descentStart(start);
window.descentEachPage(() => {
  watchNear();
  afterLoad();
  onHash();
});
})();
