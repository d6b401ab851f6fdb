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
// A calculator's numbers (a widget's results with data-quantity) open the same dialog, computed in
// the widget worker for the inputs of the results on screen (widgets.js's descentWidgets.explain,
// descent.widgets._explain): the number becomes a button once the page can compute (not from
// file://, where its controls are frozen too), and the dialog follows a new result while it is open.
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
    shownFor = null;
    if (opener && opener.isConnected) opener.focus();
  });
  document.body.append(dialog);
  return dialog;
}

// A widget's number: the dialog's content comes from the worker, for the inputs on screen.
const WIDGET_NUMBER = ".descent-widget__output .descent-stat[data-quantity] .descent-stat__number";
let shownFor = null; // {root, quantity, number} of the widget number whose derivation is open

function enhance(scope) {
  if (location.protocol === "file:" || !window.descentWidgets) return;
  for (const n of (scope || document).querySelectorAll(WIDGET_NUMBER)) {
    if (n.classList.contains("descent-q")) continue;
    n.classList.add("descent-q", "descent-q--widget");
    n.tabIndex = 0;
    n.setAttribute("role", "button");
    n.setAttribute("aria-haspopup", "dialog");
    const label = n.closest(".descent-stat").querySelector(".descent-stat__label");
    n.setAttribute("aria-label", `${n.textContent}: how ${label ? label.textContent : "this number"} is computed`);
  }
}

function showWidget(d, root, quantity, number) {
  const body = d.querySelector(".descent-how-dialog__body");
  const stat = number.closest(".descent-stat");
  const label = stat.querySelector(".descent-stat__label");
  const unit = stat.querySelector(".descent-stat__unit");
  d.querySelector(".descent-how-dialog__title").textContent =
    `${label ? label.textContent : quantity}: ${number.textContent}${unit ? " " + unit.textContent : ""}`;
  d.dataset.quantity = quantity;
  delete d.dataset.value;
  delete d.dataset.formula;
  const wait = document.createElement("p");
  wait.textContent = "Computing this number's derivation in your browser for the inputs shown...";
  body.replaceChildren(wait);
  d.setAttribute("aria-busy", "true");
  shownFor = { root, quantity, number };
  const asked = shownFor;
  window.descentWidgets.explain(root, quantity).then((r) => {
    if (shownFor !== asked || !d.open) return;
    d.removeAttribute("aria-busy");
    if (!r.ok) {
      const p = document.createElement("p");
      p.textContent = `No derivation: ${r.message}`;
      body.replaceChildren(p);
      return;
    }
    const t = document.createElement("template");
    t.innerHTML = r.html;
    body.replaceChildren(t.content);
    d.dataset.value = String(r.value);
    if (r.formula) d.dataset.formula = r.formula;
  });
}

function openWidget(number) {
  const root = number.closest(".descent-widget[data-widget]");
  const stat = number.closest(".descent-stat[data-quantity]");
  if (!root || !stat || !window.descentWidgets || typeof HTMLDialogElement === "undefined") return false;
  const d = ensureDialog();
  opener = number;
  showWidget(d, root, stat.dataset.quantity, number);
  if (!d.open) d.showModal();
  return true;
}

// A new result while a widget number's derivation is open: the same number, derived again.
document.addEventListener("descent:result", (ev) => {
  enhance(ev.target);
  if (!shownFor || !dialog || !dialog.open || ev.target !== shownFor.root) return;
  const stat = Array.from(ev.target.querySelectorAll(".descent-stat[data-quantity]"))
    .find((s) => s.dataset.quantity === shownFor.quantity);
  if (stat) showWidget(dialog, shownFor.root, shownFor.quantity, stat.querySelector(".descent-stat__number"));
});

function open(a) {
  const entry = entryFor(a);
  if (!entry || typeof HTMLDialogElement === "undefined") return false;
  if (window.descentLazy) window.descentLazy.draw(entry); // its body may still be undrawn (lazy.js)
  const d = ensureDialog();
  const summary = entry.querySelector("summary");
  d.querySelector(".descent-how-dialog__title").textContent = summary ? summary.textContent : "";
  const body = d.querySelector(".descent-how-dialog__body");
  const parts = Array.from(entry.children).filter((c) => c.tagName !== "SUMMARY").map((c) => c.cloneNode(true));
  for (const p of parts) for (const el of p.querySelectorAll("[id]")) el.removeAttribute("id");
  body.replaceChildren(...parts);
  d.dataset.quantity = a.dataset.quantity || "";
  delete d.dataset.value;
  delete d.dataset.formula;
  if (entry.dataset.value) d.dataset.value = entry.dataset.value;
  if (entry.dataset.formula) d.dataset.formula = entry.dataset.formula;
  shownFor = null;
  d.removeAttribute("aria-busy");
  opener = a;
  if (!d.open) d.showModal();
  return true;
}

// Captured at the window, before Material's instant navigation sees the click and follows the link.
window.addEventListener("click", (ev) => {
  const w = ev.target.closest && ev.target.closest(".descent-q--widget");
  if (w && ev.button === 0 && openWidget(w)) {
    ev.preventDefault();
    ev.stopPropagation();
    return;
  }
  const a = ev.target.closest && ev.target.closest("a.descent-q");
  if (!a || ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return;
  if (open(a)) {
    ev.preventDefault();
    ev.stopPropagation();
  }
}, true);

// Enter on a link is a click; Space is not, by default: it opens the derivation too.
window.addEventListener("keydown", (ev) => {
  const w = ev.target.closest && ev.target.closest(".descent-q--widget");
  if (w && (ev.key === " " || ev.key === "Enter") && openWidget(w)) {
    ev.preventDefault();
    ev.stopPropagation();
    return;
  }
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

function page() {
  openTarget();
  enhance();
}

window.addEventListener("hashchange", openTarget);
window.descentStart(page);
window.descentEachPage(page);
})();
