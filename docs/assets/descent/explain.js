// descent explain: a number on the page opens its derivation (descent.site.explain).
//
// The build links every number a page prints (a.descent-q, with data-quantity) to its entry in
// the page's last section, "How each number on this page is computed": a collapsed <details> with
// the formula (KaTeX, rendered at build), the inputs and their sources, the assumptions and the
// command. Without this script (and it needs nothing but the page, so file:// too) the link jumps
// to the entry. With it, a click, Enter or Space opens the same content in a modal <dialog>
// (role dialog), closed by Escape, its Close button or a click outside; focus returns to the number.
// Arriving at an entry's address (#how-...) opens that entry where it is.
//
// A classic script, like widgets.js (file://, any base path).

(() => {
"use strict";

let dialog = null;
let opener = null;

// The number's entry on this page. Material's instant navigation makes every href absolute, so
// the link's own URL is read: same page, a #how-... fragment.
function entryFor(a) {
  let url;
  try {
    url = new URL(a.href, location.href);
  } catch {
    return null;
  }
  if (url.pathname !== location.pathname || !url.hash.startsWith("#how-")) return null;
  const el = document.getElementById(decodeURIComponent(url.hash.slice(1)));
  return el && el.tagName === "DETAILS" ? el : null;
}

function ensureDialog() {
  if (dialog && dialog.isConnected) return dialog;
  dialog = document.createElement("dialog");
  dialog.className = "descent-how-dialog";
  dialog.setAttribute("aria-labelledby", "descent-how-title");
  dialog.innerHTML =
    '<div class="descent-how-dialog__head"><h2 id="descent-how-title" class="descent-how-dialog__title"></h2>' +
    '<button type="button" class="descent-how-dialog__close">Close</button></div>' +
    '<div class="descent-how-dialog__body md-typeset"></div>' +
    '<p class="descent-how-dialog__foot md-typeset"><a href="#how-each-number">Every number of this page, at its end</a></p>';
  dialog.querySelector(".descent-how-dialog__close").addEventListener("click", () => dialog.close());
  dialog.querySelector(".descent-how-dialog__foot a").addEventListener("click", () => dialog.close());
  // A click on the backdrop (the dialog element itself, outside its content box) closes it.
  dialog.addEventListener("click", (ev) => {
    if (ev.target !== dialog) return;
    const r = dialog.getBoundingClientRect();
    if (ev.clientX < r.left || ev.clientX > r.right || ev.clientY < r.top || ev.clientY > r.bottom) dialog.close();
  });
  dialog.addEventListener("close", () => {
    if (opener && opener.isConnected) opener.focus();
  });
  document.body.append(dialog);
  return dialog;
}

function open(a) {
  const entry = entryFor(a);
  if (!entry || typeof HTMLDialogElement === "undefined") return false;
  const d = ensureDialog();
  const summary = entry.querySelector("summary");
  d.querySelector(".descent-how-dialog__title").textContent = summary ? summary.textContent : "";
  const body = d.querySelector(".descent-how-dialog__body");
  const parts = Array.from(entry.children).filter((c) => c.tagName !== "SUMMARY").map((c) => c.cloneNode(true));
  for (const p of parts) for (const el of p.querySelectorAll("[id]")) el.removeAttribute("id");
  body.replaceChildren(...parts);
  d.dataset.quantity = a.dataset.quantity || "";
  opener = a;
  if (!d.open) d.showModal();
  return true;
}

// Captured at the window, before Material's instant navigation sees the click and follows the link.
window.addEventListener("click", (ev) => {
  const a = ev.target.closest && ev.target.closest("a.descent-q");
  if (!a || ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return;
  if (open(a)) {
    ev.preventDefault();
    ev.stopPropagation();
  }
}, true);

// Enter on a link is a click; Space is not, by default: it opens the derivation too.
window.addEventListener("keydown", (ev) => {
  if (ev.key !== " ") return;
  const a = ev.target.closest && ev.target.closest("a.descent-q");
  if (a && open(a)) {
    ev.preventDefault();
    ev.stopPropagation();
  }
}, true);

function openTarget() {
  const id = decodeURIComponent(location.hash.slice(1));
  if (!id.startsWith("how-")) return;
  const el = document.getElementById(id);
  if (el && el.tagName === "DETAILS") el.open = true;
}

function start() {
  openTarget();
  window.addEventListener("hashchange", openTarget);
  const doc$ = window.document$;
  if (doc$ && typeof doc$.subscribe === "function") doc$.subscribe(() => openTarget());
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start, { once: true });
else start();
})();
