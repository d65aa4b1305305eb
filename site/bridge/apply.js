// A worker's reply applied to the page (the redraw protocol: see bridge.js): panels swapped, patches
// set, the form's model-dependent parts and its controls' values set, the rest handed to the module
// whose job it is (the address bar, a model to download, a scroll, the notice). Also what only new
// markup can change: which figures are wider than their column.
//
// State: lastForm, the last form data applied (as JSON), so that an unchanged one touches nothing.

import { restoreFocus, focusedControl } from "./focus.js";
import { setCodeText } from "./code.js";
import { chooseModelOfLink, setShownModel } from "./model.js";
import { $ } from "./page.js";
import { applyPatch } from "./patch.js";
import { isBookkeeping, queuedTypes, send, typingBox } from "./queue.js";
import { bringIntoView } from "./scroll.js";
import { notify } from "./status.js";
import { followState } from "./url.js";

// A figure wider than its column scrolls sideways inside its card: mark it, and the page shows a cue.
// Only the figures in (or at) `roots` are measured: a reply that redrew no figure (a slider's query
// line) forces no layout of the page. The page growing or the window resizing re-measures them all.
function markScrollable(roots = [document.documentElement]) {
  const figures = roots.flatMap((r) => [...(r.matches(".figure") ? [r] : []), ...r.querySelectorAll(".figure")]);
  // every read first: one layout, not one per figure
  const wide = figures.map((f) => f.scrollWidth > f.clientWidth + 1);
  figures.forEach((f, k) => f.classList.toggle("is-scrollable", wide[k]));
}
new ResizeObserver(() => markScrollable()).observe(document.documentElement);

// event: the event this replies to (null for the first reply of a page's start-up)
export function applyResponse(res, event = null) {
  const was = focusedControl();
  const redrawn = [];
  for (const [id, markup] of Object.entries(res.panels || {})) {
    const el = document.querySelector(`[data-panel="${id}"]`);
    if (!el) throw new Error(`the page has no panel "${id}"`);
    redrawn.push(el);
    // a <details data-keep> the reader opened stays open in the redrawn panel
    const open = [...el.querySelectorAll("details[data-keep][open]")].map((d) => d.dataset.keep);
    el.innerHTML = markup; // trusted: rendered by our Python views, all text escaped there
    for (const key of open) el.querySelector(`details[data-keep="${CSS.escape(key)}"]`)?.setAttribute("open", "");
  }
  for (const [id, ops] of Object.entries(res.patches || {})) {
    const el = document.querySelector(`[data-panel="${id}"]`);
    if (!el || !applyPatch(el, ops)) send({ type: "redraw", value: id });
  }
  restoreFocus(was);
  // a tour step: the keyboard (and a screen reader) goes to the step's heading; leaving, to the start button
  if (event && event.type === "tour_step") ($("tour-title") || $("tour-start"))?.focus({ preventScroll: true });
  // only new markup can change a figure's width (a patch changes numbers): no forced layout for a slider
  markScrollable(redrawn);
  applyForm(res.form);
  // A control with a newer event still queued keeps what the reader set (no flicker back).
  const pending = queuedTypes();
  if (res.values && res.values.model !== undefined) setShownModel(res.values.model);
  for (const [id, value] of Object.entries(res.values || {})) {
    if (id === "attention-code") { setCodeText(String(value)); continue; } // the editor keeps its caret
    const el = $(id);
    if (!el || el === typingBox() || (el.dataset.event && pending.has(el.dataset.event))) continue;
    if (el.type === "checkbox") el.checked = Boolean(value);
    else if (el.type === "text" && el === document.activeElement) continue; // never fight the caret
    // a select whose options were just replaced (another model's presets) may show nothing at all:
    // its value then reads "" like the preset prompt's, so it is set even when the values agree
    else if (el.value !== String(value) || el.selectedIndex === -1) el.value = String(value);
  }
  // A link to a model still to download: the page shows the default meanwhile (model.js)
  if (res.load_model) chooseModelOfLink(res.load_model, Boolean(event && event.restore));
  else if (typeof res.hash === "string") followState(res.hash);
  if (res.stale) markOutdated(res.stale);
  if (res.focus) bringIntoView(res.focus);
  // a link's reply says what of it was ignored, or nothing: a notice about an earlier link goes
  if (res.notice || (event && event.type === "load_hash")) notify(res.notice || "");
  if (!isBookkeeping(event) || res.message) showMessage(res);
}

// An input error next to its control (#<field>-message when the control has its own line, else the
// sentence's), or no message: every reply to a reader's event clears the last one.
function showMessage(res) {
  for (const el of document.querySelectorAll(".input-message")) el.textContent = "";
  const msg = (res.field && $(`${res.field}-message`)) || $("input-message");
  msg.textContent = res.message || "";
  for (const el of document.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  if (res.message && res.field && $(res.field)) $(res.field).setAttribute("aria-invalid", "true");
}

// The form is never redrawn (caret, focus); what depends on the model comes as data: the options of
// its selects, a few texts and where the √d_k slider marks the true scale. Text via textContent only.
let lastForm = "";
function applyForm(form) {
  const key = form ? JSON.stringify(form) : "";
  if (!form || key === lastForm) return;
  lastForm = key;
  for (const [id, options] of Object.entries(form.options || {})) {
    const sel = $(id);
    if (!sel) continue;
    const same = sel.options.length === options.length
      && options.every(([v, label], i) => sel.options[i].value === v && sel.options[i].text === label);
    if (same) continue;
    const keep = sel.value;
    sel.replaceChildren(...options.map(([v, label]) => {
      const o = document.createElement("option");
      o.value = v;
      o.textContent = label;
      o.disabled = id === "preset" && v === ""; // the preset prompt is not a choice
      return o;
    }));
    sel.value = keep;
  }
  for (const [id, text] of Object.entries(form.text || {})) if ($(id)) $(id).textContent = text;
  for (const [id, pct] of Object.entries(form.marker || {})) {
    const box = $(id) && $(id).closest(".range-with-marker");
    if (box) box.style.setProperty("--marker", `${pct}%`);
  }
}

// A panel off screen when its inputs changed keeps its old picture until it comes near (Python's
// "stale" list, in every reply): marked data-outdated, which a printout shows as "not drawn".
function markOutdated(ids) {
  const stale = new Set(ids);
  for (const el of document.querySelectorAll("[data-panel]")) {
    const outdated = stale.has(el.dataset.panel);
    if (el.hasAttribute("data-outdated") !== outdated) el.toggleAttribute("data-outdated", outdated);
  }
}
