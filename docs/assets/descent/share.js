// descent share: a widget's inputs live in the page's address, so a link reopens the same set-up.
//
// One query parameter per widget, named after the widget (data-widget), holding its visible
// inputs as readable field:value pairs joined by ";", each part percent-encoded:
//
//     part-5-the-whole-descent.html?size_it_yourself=model:llama-3.1-70b;accelerator:h200;context:8192
//
// As the reader changes an input the address is rewritten (history.replaceState; no new history
// entry). Opening such an address writes the values into the widget's controls and fires the same
// input events a reader's typing fires, so widgets.js computes them in the Pyodide worker and a bad
// or outdated value gets the widget's own message under its field (a choice the widget no longer
// offers is added for the moment as a marked option, so Python names it in that message). A field
// the widget no longer has is reported in one sentence and ignored. Each widget gets a "Copy link"
// button (data-action="share") whose link holds that widget's inputs and points at the widget.
//
// Export (issue 26): "Copy as Markdown" (data-action="copy-markdown") copies the inputs and the
// results shown as Markdown tables, to paste into an issue; "Copy as JSON" (data-action="copy-json")
// copies the result as data: where the command line has the same calculation, the widget's hidden
// data-export element (views.export) holds it under the keys of the command's --json; otherwise the
// inputs and each shown number (its label, value, unit and quantity name).
//
// From file:// the controls are frozen and show the precomputed defaults (widgets.js): a link's
// inputs are then listed in a sentence that says the results shown are the defaults and that the
// hosted site (or a local web server) computes the link's own.
//
// A classic script loaded after widgets.js, for the same reasons (file://, any base path). It does
// not touch widgets.js's state: it only reads and writes the form controls and dispatches events.

(() => {
"use strict";

const isFile = () => location.protocol === "file:";
// Longest address written (a pasted config.json can be long); beyond it the link is not updated.
const MAX_URL = 8000;
const bound = new WeakSet();
// Milliseconds an input rests before the address is rewritten.
const UPDATE_WAIT_MS = 250;

const fields = (root) => Array.from(root.querySelectorAll(".descent-widget__form .descent-field[data-field]"));

// The widget's visible inputs as [[field, text], ...], in the form's order.
function readFields(root) {
  const out = [];
  for (const f of fields(root)) {
    if (f.hidden) continue;
    const name = f.dataset.field;
    let v = null;
    switch (f.dataset.kind) {
      case "range":
      case "number":
        v = f.querySelector(".descent-field__number").value;
        break;
      case "select":
        v = f.querySelector("select").value;
        break;
      case "segmented": {
        const c = f.querySelector("input[type=radio]:checked");
        v = c ? c.value : null;
        break;
      }
      case "toggle":
        v = String(f.querySelector("input[type=checkbox]").checked);
        break;
      case "text":
        v = f.querySelector("textarea, input").value;
        break;
    }
    if (v !== null) out.push([name, v]);
  }
  return out;
}

const enc = (s) => encodeURIComponent(s).replace(/%2C/g, ",").replace(/%2F/g, "/");

function encodeState(pairs) {
  return pairs.map(([k, v]) => `${enc(k)}:${enc(v)}`).join(";");
}

function decodeState(text) {
  const out = [];
  for (const part of text.split(";")) {
    if (!part) continue;
    const i = part.indexOf(":");
    if (i < 1) continue;
    try {
      out.push([decodeURIComponent(part.slice(0, i)), decodeURIComponent(part.slice(i + 1))]);
    } catch {
      out.push([part.slice(0, i), part.slice(i + 1)]); // a malformed escape: the raw text, refused by its field
    }
  }
  return out;
}

// The raw (still encoded) value of query parameter `name`, or null.
function rawParam(search, name) {
  for (const part of search.replace(/^\?/, "").split("&")) {
    const i = part.indexOf("=");
    const key = i < 0 ? part : part.slice(0, i);
    let k;
    try {
      k = decodeURIComponent(key);
    } catch {
      continue;
    }
    if (k === name) return i < 0 ? "" : part.slice(i + 1);
  }
  return null;
}

function withParam(url, name, value) {
  const kept = url.search.replace(/^\?/, "").split("&").filter((p) => {
    if (!p) return false;
    const key = p.split("=")[0];
    try {
      return decodeURIComponent(key) !== name;
    } catch {
      return true;
    }
  });
  if (value !== null) kept.push(`${enc(name)}=${value}`);
  const u = new URL(url.href);
  u.search = kept.length ? "?" + kept.join("&") : "";
  return u;
}

function linkFor(root) {
  let u = withParam(new URL(location.href), root.dataset.widget, encodeState(readFields(root)));
  if (root.id) u.hash = root.id;
  return u;
}

const drawn = new WeakMap();

function updateAddress(root) {
  // Only a reader's own values go into the address: at the page's values the widget's parameter is
  // dropped, so a plain visit keeps a plain address (and Material's navigation its own history).
  const state = encodeState(readFields(root));
  const u = withParam(new URL(location.href), root.dataset.widget, state === drawn.get(root) ? null : state);
  if (u.href.length > MAX_URL || u.href === location.href) return;
  try {
    history.replaceState(history.state, "", u.href);
  } catch {
    // Some browsers refuse to rewrite a file:// address; the Copy link button still works.
  }
}

function note(root, text) {
  let p = root.querySelector(".descent-share__note");
  if (!p) {
    p = document.createElement("p");
    p.className = "descent-share__note";
    p.setAttribute("role", "status");
    const bar = root.querySelector(".descent-share");
    bar.insertAdjacentElement("afterend", p);
  }
  p.textContent = text;
  p.hidden = !text;
}

// Write one value into a field's control and fire the event a reader's change fires.
function applyField(f, value) {
  const fire = (el, type) => el.dispatchEvent(new Event(type, { bubbles: true }));
  switch (f.dataset.kind) {
    case "range":
    case "number": {
      const num = f.querySelector(".descent-field__number");
      num.value = value;
      fire(num, "input");
      fire(num, "change");
      return;
    }
    case "select": {
      const sel = f.querySelector("select");
      if (!Array.from(sel.options).some((o) => o.value === value)) {
        const o = document.createElement("option");
        o.value = value;
        o.textContent = `${value} (from the link; not offered)`;
        o.dataset.fromLink = "";
        sel.append(o);
      }
      sel.value = value;
      fire(sel, "change");
      return;
    }
    case "segmented": {
      let r = Array.from(f.querySelectorAll("input[type=radio]")).find((x) => x.value === value);
      if (!r) {
        const first = f.querySelector("input[type=radio]");
        r = document.createElement("input");
        r.type = "radio";
        r.name = first ? first.name : f.dataset.field;
        r.value = value;
        r.hidden = true;
        r.dataset.fromLink = "";
        (first ? first.parentElement : f).append(r);
      }
      r.checked = true;
      fire(r, "change");
      return;
    }
    case "toggle": {
      const c = f.querySelector("input[type=checkbox]");
      c.checked = value === "true";
      fire(c, "change");
      return;
    }
    case "text": {
      const t = f.querySelector("textarea, input");
      t.value = value;
      fire(t, "input");
    }
  }
}

// Options and radios added for a link's refused value go once the reader picks another.
function dropLinkOptions(root, target) {
  const f = target.closest && target.closest(".descent-field");
  if (!f) return;
  for (const el of f.querySelectorAll("[data-from-link]")) {
    if (el.tagName === "OPTION" ? !el.selected : !el.checked) el.remove();
  }
}

function restore(root) {
  const raw = rawParam(location.search, root.dataset.widget);
  if (raw === null) return;
  const pairs = decodeState(raw);
  const byName = new Map(fields(root).map((f) => [f.dataset.field, f]));
  const unknown = pairs.filter(([k]) => !byName.has(k)).map(([k]) => k);
  const known = pairs.filter(([k]) => byName.has(k));
  const said = [];
  if (unknown.length) {
    said.push(`This link names ${unknown.length === 1 ? "an input" : "inputs"} this calculator does not have (${unknown.join(", ")}): ignored.`);
  }
  if (isFile()) {
    if (known.length) {
      said.push(`This link asks for ${known.map(([k, v]) => `${k} = ${v}`).join(", ")}. The results shown are precomputed for the defaults; ` +
        "open this link on the published site (or a local web server) to compute the link's own.");
    }
    note(root, said.join(" "));
    return;
  }
  // Choices first (they show or hide other fields), then the rest, in the link's order.
  const order = (f) => (f.dataset.kind === "select" || f.dataset.kind === "segmented" ? 0 : 1);
  known.sort((a, b) => order(byName.get(a[0])) - order(byName.get(b[0])));
  for (const [k, v] of known) applyField(byName.get(k), v);
  note(root, said.join(" "));
}

// Copy `text`; where the browser refuses, the text is put in the widget's box, selected.
function copyText(root, text, said) {
  const done = (msg) => {
    root.querySelector(".descent-share__said").textContent = msg;
  };
  const fallback = () => {
    const box = root.querySelector(".descent-share__url");
    box.hidden = false;
    box.value = text;
    box.focus();
    box.select();
    done("Your browser did not allow copying: the text is selected in the box, copy it from there.");
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(() => done(said), fallback);
  } else {
    fallback();
  }
}

function copy(root) {
  copyText(root, linkFor(root).href, "Link copied: it opens this calculator with these inputs.");
}

// A table cell's text for Markdown: one line, pipes escaped.
const mdCell = (t) => String(t).replace(/\s+/g, " ").trim().replace(/\|/g, "\\|");
const mdRow = (cells) => `| ${cells.map(mdCell).join(" | ")} |`;

function fieldLabel(root, name) {
  const f = root.querySelector(`.descent-field[data-field="${CSS.escape(name)}"]`);
  const l = f && f.querySelector("label, legend");
  return l ? l.textContent : name;
}

// The results shown, as [{label, value, unit, quantity}] (stats) and tables of text.
function shownStats(out) {
  return Array.from(out.querySelectorAll(".descent-stat")).map((s) => ({
    label: (s.querySelector(".descent-stat__label") || {}).textContent || "",
    value: (s.querySelector(".descent-stat__number") || {}).textContent || "",
    unit: (s.querySelector(".descent-stat__unit") || {}).textContent || "",
    quantity: s.dataset.quantity || "",
  }));
}

function markdownOf(root) {
  const title = root.querySelector(".descent-widget__title");
  const lines = [`**${title ? title.textContent : root.dataset.widget}**`, "", mdRow(["Input", "Value"]), mdRow(["---", "---"])];
  for (const [k, v] of readFields(root)) if (v !== "" && k !== "config_json") lines.push(mdRow([fieldLabel(root, k), v]));
  const out = root.querySelector(".descent-widget__output");
  const stats = shownStats(out);
  if (stats.length) {
    lines.push("", mdRow(["Output", "Value"]), mdRow(["---", "---:"]));
    for (const s of stats) lines.push(mdRow([s.label, `${s.value}${s.unit ? " " + s.unit : ""}`]));
  }
  for (const fig of out.querySelectorAll("figure.descent-bars")) {
    const cap = fig.querySelector("figcaption");
    lines.push("", ...(cap ? [cap.textContent, ""] : []), mdRow(["", "Value"]), mdRow(["---", "---:"]));
    for (const li of fig.querySelectorAll(".descent-bar")) {
      const note = li.querySelector(".descent-bar__note");
      lines.push(mdRow([li.querySelector(".descent-bar__label").textContent,
        li.querySelector(".descent-bar__value").textContent + (note ? ` (${note.textContent})` : "")]));
    }
  }
  for (const t of out.querySelectorAll("table")) {
    const cap = t.querySelector("caption");
    const rows = Array.from(t.querySelectorAll("tr")).map((tr) => Array.from(tr.children).map((c) => c.textContent));
    if (!rows.length) continue;
    lines.push("", ...(cap ? [cap.textContent, ""] : []), mdRow(rows[0]), mdRow(rows[0].map(() => "---")));
    for (const r of rows.slice(1)) lines.push(mdRow(r));
  }
  const status = root.querySelector(".descent-widget__status");
  if (status && root.dataset.state !== "live") lines.push("", `_${status.textContent}_`);
  return lines.join("\n") + "\n";
}

function jsonOf(root) {
  const out = root.querySelector(".descent-widget__output");
  const data = out.querySelector("[data-export]");
  if (data) {
    try {
      return JSON.stringify(JSON.parse(data.dataset.export), null, 2) + "\n";
    } catch {
      // a malformed export element: fall back to what is shown
    }
  }
  const inputs = {};
  for (const [k, v] of readFields(root)) if (k !== "config_json") inputs[k] = v;
  const outputs = shownStats(out).map((s) => Object.fromEntries(Object.entries(s).filter(([, v]) => v !== "")));
  return JSON.stringify({ widget: root.dataset.widget, inputs, outputs }, null, 2) + "\n";
}

function bind(root) {
  if (bound.has(root) || !root.dataset.widget) return;
  const form = root.querySelector(".descent-widget__form");
  const status = root.querySelector(".descent-widget__status");
  if (!form || !fields(root).length) return;
  bound.add(root);
  drawn.set(root, encodeState(readFields(root))); // the page's own values: never written into the address
  const bar = document.createElement("div");
  bar.className = "descent-share";
  bar.innerHTML =
    '<button type="button" class="descent-share__button" data-action="share">Copy link</button>' +
    '<button type="button" class="descent-share__button" data-action="copy-markdown">Copy as Markdown</button>' +
    '<button type="button" class="descent-share__button" data-action="copy-json">Copy as JSON</button>' +
    '<span class="descent-share__said" role="status"></span>' +
    '<textarea class="descent-share__url" rows="3" readonly hidden aria-label="The text to copy"></textarea>';
  (status || form).insertAdjacentElement("afterend", bar);
  const title = root.querySelector(".descent-widget__title");
  bar.querySelector("button").setAttribute("aria-label", `Copy a link to ${title ? title.textContent : "this calculator"} with these inputs`);
  bar.querySelector("button").addEventListener("click", () => copy(root));
  bar.querySelector('[data-action="copy-markdown"]').addEventListener("click", () =>
    copyText(root, markdownOf(root), "Copied as Markdown: the inputs and the results shown, as tables."));
  bar.querySelector('[data-action="copy-json"]').addEventListener("click", () =>
    copyText(root, jsonOf(root), "Copied as JSON: the results shown, as data."));
  const pinField = root.querySelector('.descent-field[data-field="pinned"] textarea, .descent-field[data-field="pinned"] input');
  if (pinField) {
    // Compare (the sizing sandbox): hold the current inputs in the "pinned" field; Python then sets
    // that set-up's results beside the next ones (descent.memory.compare).
    const pin = document.createElement("button");
    pin.type = "button";
    pin.className = "descent-share__button";
    pin.dataset.action = "pin";
    pin.textContent = "Pin these inputs to compare";
    pin.addEventListener("click", () => {
      pinField.value = readFields(root).filter(([k]) => k !== "pinned" && k !== "config_json").map(([k, v]) => `${k}:${v}`).join(";");
      pinField.dispatchEvent(new Event("input", { bubbles: true }));
      root.querySelector(".descent-share__said").textContent = "Pinned: change an input to see both set-ups side by side.";
    });
    bar.querySelector(".descent-share__said").before(pin);
    if (isFile()) pin.disabled = true;
  }
  let timer = 0;
  // A dragged slider fires many events and browsers throttle history updates; and rewriting the
  // address costs the page a full restyle (20-40 ms on Part 4 on a 2-core machine, measured in a
  // Chromium trace): it is written once the inputs and results rest, never in a result's own task.
  const later = () => {
    clearTimeout(timer);
    timer = setTimeout(() => updateAddress(root), UPDATE_WAIT_MS);
  };
  const changed = (ev) => {
    dropLinkOptions(root, ev.target);
    later();
    const said = root.querySelector(".descent-share__said");
    if (said.textContent) said.textContent = "";
  };
  // A clicked output (data-set) changes the controls without an event: its result arrives after.
  root.addEventListener("descent:result", later);
  restore(root);
  if (!isFile()) {
    form.addEventListener("input", changed);
    form.addEventListener("change", changed);
  }
}

function bindAll() {
  for (const root of document.querySelectorAll(".descent-widget[data-widget]")) bind(root);
}

// A far widget's controls arrive later (lazy.js draws them near the screen or after the load).
document.addEventListener("descent:drawn", (ev) => bind(ev.target));

// After widgets.js's bind (start.js runs the scripts' starts in the order they were joined).
window.descentStart(bindAll);
window.descentEachPage(bindAll);
})();
