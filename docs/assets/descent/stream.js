// descent stream: replays a reply token by token at the rate the widget computed.
//
// The Python view (descent.widgets.views.stream) renders the whole reply as text inside
// <output data-stream='{"tokens": [...], "rate": tokens per second, "delay": seconds}'>, so the
// page is complete without JavaScript. This script, when the box comes into view (and each time a
// widget re-renders it), empties it, waits the delay (the time to first token) and then shows
// ceil((t - delay) x rate) tokens at time t, one animation frame at a time, until all are there.
// Readers who ask for reduced motion get the whole text at once. A classic script (file:// safe).
(function () {
  "use strict";
  const started = new WeakSet();
  const reduce = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;

  function play(el) {
    if (started.has(el)) return;
    started.add(el);
    let data;
    try {
      data = JSON.parse(el.dataset.stream);
    } catch (e) {
      return; // leave the full text in place
    }
    const tokens = Array.isArray(data.tokens) ? data.tokens.map(String) : [];
    const rate = Number(data.rate);
    const delay = Math.max(0, Number(data.delay) || 0);
    if (reduce || !tokens.length || !(rate > 0) || !isFinite(rate)) return;
    el.textContent = "";
    el.dataset.streaming = "true";
    let t0 = null;
    let shown = 0;
    function frame(now) {
      if (!el.isConnected) return;
      if (t0 === null) t0 = now;
      const t = (now - t0) / 1000 - delay;
      const n = t < 0 ? 0 : Math.min(tokens.length, Math.ceil(t * rate));
      if (n > shown) {
        el.textContent += tokens.slice(shown, n).join("");
        shown = n;
      }
      if (shown < tokens.length) requestAnimationFrame(frame);
      else el.dataset.streaming = "done";
    }
    requestAnimationFrame(frame);
  }

  const seen = "IntersectionObserver" in window
    ? new IntersectionObserver((entries) => {
      for (const e of entries) if (e.isIntersecting) { seen.unobserve(e.target); play(e.target); }
    })
    : null;

  function scan(root) {
    for (const el of root.querySelectorAll("[data-stream]")) {
      if (started.has(el)) continue;
      if (seen) seen.observe(el);
      else play(el);
    }
  }

  function init() {
    scan(document);
    new MutationObserver(() => scan(document)).observe(document.body, { childList: true, subtree: true });
  }
  window.descentStart(init); // start.js: in a task of its own, after Material's start-up
})();
