// The main-thread bridge: starts the Python worker, forwards events, swaps markup.
//
// It holds no state and no mathematics. Python (py/attention_explorer/worker.py, reached through
// worker_main.py in a PyScript worker so the page never freezes) owns the state and returns
// {panels: {id: markup}, values: {id: value}, message, field, notice, hash, focus}.
// Panel markup comes from the project's own Python views, which escape every
// piece of reader text; the bridge never builds markup from reader or URL text
// (messages, notices and share text go in via textContent / .value).
//
// Starting the worker (PyScript, the runtime's download, NumPy) is in launch.js, a part of this bridge.
// One more script touches the browser, in the worker: site/pyodide-progress.mjs, Pyodide's loader with a
// byte count, because only the worker sees the runtime's download (the status line shows it).
//
// Readiness hook for tests and embeds: <html data-state="loading|ready|error">.
// The same script serves index.html and embed.html (<html data-mode="embed">).
// Saving a panel as SVG/PNG needs the rendered DOM, so that one job is done on this
// thread too, in export.js, which is imported only when a reader exports (keeping this
// file small enough to read in one sitting).

import { firstWorker, onProgress, startWorker } from "./launch.js";

const root = document.documentElement;
const EMBED = root.dataset.mode === "embed";
const $ = (id) => document.getElementById(id);
const statusBox = $("runtime-status");
const STEPS = 4; // the runtime downloaded, Python started, NumPy loaded, the first picture computed
const BOOT_TIMEOUT_MS = 180000; // a slow phone may take a minute; after this, say so

// ---------------------------------------------------------------- status

function progress(text, step) {
  if (root.dataset.state === "error") return; // the failure's message stays (downloads may still be running)
  $("runtime-status-text").textContent = text;
  $("runtime-progress").value = step;
  $("runtime-progress").max = STEPS;
}

onProgress(progress); // the worker's start-up, from launch.js (it began before this module ran)

function fail(message) {
  root.dataset.state = "error";
  statusBox.classList.add("is-error");
  $("runtime-status-text").textContent = message;
  $("runtime-progress").hidden = true;
}

let noticeTimer = 0;
function notify(text) {
  const el = $("link-notice");
  el.textContent = text;
  el.hidden = !text;
  clearTimeout(noticeTimer);
  if (text) noticeTimer = setTimeout(() => { el.hidden = true; }, 8000);
}

// ---------------------------------------------------------------- responses

// A figure wider than its column scrolls sideways inside its card: mark it, and the page shows a cue.
// Only the figures in (or at) `roots` are measured: a reply that redrew no figure (a slider's query
// line) forces no layout of the page. The page growing or the window resizing re-measures them all.
function markScrollable(roots = [document.documentElement]) {
  const figures = roots.flatMap((r) => [...(r.matches(".figure") ? [r] : []), ...r.querySelectorAll(".figure")]);
  const wide = figures.map((f) => f.scrollWidth > f.clientWidth + 1); // every read first: one layout, not one per figure
  figures.forEach((f, k) => f.classList.toggle("is-scrollable", wide[k]));
}
new ResizeObserver(() => markScrollable()).observe(document.documentElement);

// The data-* attributes that name a control across redraws (a chip, a cell, a step, a bar).
const IDENTITY = ["event", "toggle", "tokenIndex", "value", "i", "j", "measure", "dim", "unit"];

// Where the keyboard focus is, as a selector that finds the same control in redrawn markup.
function focusedControl() {
  const el = document.activeElement;
  const panel = el && el !== document.body && el.closest("[data-panel]");
  if (!panel) return null;
  const attrs = IDENTITY.filter((k) => el.dataset[k] !== undefined)
    .map((k) => `[data-${k.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase())}="${CSS.escape(el.dataset[k])}"]`);
  return { panel: panel.dataset.panel, selector: el.localName + attrs.join(""),
           arrowKeys: Boolean(el.closest("[data-arrow-keys]")), grid: Boolean(el.closest("[data-grid]")) };
}

// After a redraw, put the focus back on the control that had it (or its successor), never on <body>.
function restoreFocus(was) {
  if (!was || (document.activeElement && document.activeElement !== document.body)) return;
  const panel = document.querySelector(`[data-panel="${was.panel}"]`);
  if (!panel) return;
  const target = (was.arrowKeys && panel.querySelector('[aria-current="step"]'))  // the stepper: the new stage
    || panel.querySelector(was.selector)
    || (was.grid && panel.querySelector('[data-grid-cell][tabindex="0"]'));
  if (!target) return;
  if (!target.hasAttribute("tabindex")) { // a grid cell: it becomes the grid's tab stop
    const stop = target.closest("[data-grid]")?.querySelector('[tabindex="0"]');
    if (stop) stop.setAttribute("tabindex", "-1");
    target.setAttribute("tabindex", "0");
  }
  target.focus({ preventScroll: true });
}

// Replies to the page's own bookkeeping (what is on screen, a patch that did not fit, the reader's last
// good function run again after a restart): they leave the reader's messages alone (a message about a bad
// sentence must not vanish when a panel scrolls in, nor the one saying why Python was restarted), unless
// they bring one of their own.
const BOOKKEEPING = new Set(["viewport", "redraw"]);
const isBookkeeping = (event) => Boolean(event && (BOOKKEEPING.has(event.type) || event.restore));

function applyResponse(res, event = null) {
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
  // only new markup can change a figure's width (a patch changes numbers): no forced layout for a slider
  markScrollable(redrawn);
  applyForm(res.form);
  // A control with a newer event still queued keeps what the reader set (no flicker back).
  const pending = new Set(queue.map((q) => q.event.type));
  if (res.values && res.values.model !== undefined) shownModel = res.values.model;
  for (const [id, value] of Object.entries(res.values || {})) {
    if (id === "attention-code") { setCodeText(String(value)); continue; } // the editor keeps its caret
    const el = $(id);
    if (!el || el === typing || (el.dataset.event && pending.has(el.dataset.event))) continue;
    if (el.type === "checkbox") el.checked = Boolean(value);
    else if (el.type === "text" && el === document.activeElement) continue; // never fight the caret
    // a select whose options were just replaced (another model's presets) may show nothing at all:
    // its value then reads "" like the preset prompt's, so it is set even when the values agree
    else if (el.value !== String(value) || el.selectedIndex === -1) el.value = String(value);
  }
  // A link to a model still to download: the page shows the default meanwhile, and the link stays in
  // the address bar (a reload still opens it) until the model is in and the link is replayed.
  if (res.load_model) modelComing = chooseModel(res.load_model, location.hash, true, Boolean(event && event.restore));
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

// A slider that changed only numbers: Python sends them, not markup (see attention_matrix.render_patch).
// Each operation: elements by selector inside the panel, one value per element in document order
// (joined by "\n", or by op.sep when a value holds newlines).
// Values go in as attribute values or textContent; only an "html" operation (one element, the
// affinity formula's MathML from our views) sets markup. False if the markup does not fit.
function applyPatch(panel, ops) {
  const found = ops.map((op) => panel.querySelectorAll(op.sel));
  const values = ops.map((op) => (op.values === undefined ? null
    : op.toggle ? op.values : op.html ? [op.values] : op.values.split(op.sep || "\n")));
  // a table never opened is still a template: its numbers are not patched, it is marked stale instead
  const unopened = ops.map((op, k) => Boolean(op.unopened) && found[k].length === 0
    && panel.querySelector(`details[data-keep="${CSS.escape(op.unopened)}"] > template[data-on-open]`));
  if (!ops.every((op, k) => values[k] === null || unopened[k] || values[k].length === found[k].length)) return false;
  ops.forEach((op, k) => {
    const els = found[k];
    if (unopened[k]) { unopened[k].dataset.stale = "true"; return; }
    if (op.remove) { for (const el of els) el.removeAttribute(op.remove); return; }
    for (let i = 0; i < els.length; i++) {
      const el = els[i], v = values[k][i];
      if (op.html) el.innerHTML = v; // trusted: rendered by our Python views, all text escaped there
      else if (op.toggle) el.classList.toggle(op.toggle, v === "1");
      else if (op.text) { if (el.textContent !== v) el.textContent = v; }
      else if (el.getAttribute(op.attr) !== v) el.setAttribute(op.attr, v);
    }
  });
  return true;
}

// Once ready: the views start-up left for later, and the rehearsals. A failure is a bug of ours (an
// error), unless that worker was stopped meanwhile (a restart).
let warming = null; // the warm-up in flight (attentionExplorer.waiting() shows it)
function warmUp(w) {
  const call = w.sync.warm_up().then(rehearsePatches)
    .catch((err) => (w === worker ? console.error : console.warn)("warm-up failed", err))
    .finally(() => { if (warming === call) warming = null; });
  warming = call;
}

// The worker's warm-up hands back its rehearsal's last slider move as patches (page.rehearse): applied
// here to copies of the panels that never join the page, so that V8 has compiled applyPatch before the
// reader's first move (cold, it cost that move ~5 ms more, traced). Nothing on the page changes.
function rehearsePatches(patches) {
  for (const [id, ops] of Object.entries(patches || {})) {
    const el = document.querySelector(`[data-panel="${id}"]`);
    if (!el) continue;
    const copy = el.cloneNode(true);
    for (let k = 0; k < 3; k++) applyPatch(copy, ops);
  }
}

// The panels below the first screen come pre-rendered in prerendered.json (build.py), not in the page:
// each holds an empty <template data-prerendered> until it comes near the viewport (see the viewport
// observer), and that template is gone once Python has drawn the panel.
const PENDING = ":scope > template[data-prerendered]";
let prerendered = null; // Promise of {panel id: markup}, fetched once (if it fails, Python draws them)
let prerenderedMarkup = null; // what it resolved to, for a print that cannot wait (see "print")

function loadPrerendered() {
  prerendered ||= fetch("prerendered.json").then((res) => {
    if (!res.ok) throw new Error(`prerendered.json: HTTP ${res.status}`);
    return res.json();
  }).then((markup) => (prerenderedMarkup = markup));
  return prerendered;
}

function fillSlot(slot, markup) {
  slot.insertAdjacentHTML("beforebegin", markup); // trusted: rendered by our Python views at build time
  slot.remove();
}

// Fill the pending panels among `panels` (resolves when they show their markup, or a note saying why not).
async function showPrerendered(panels) {
  const pending = panels.filter((panel) => panel.querySelector(PENDING));
  if (pending.length === 0) return;
  let markup = null, reason = "";
  try { markup = await loadPrerendered(); } catch (err) { reason = err.message; }
  const missing = [];
  for (const panel of pending) {
    const slot = panel.querySelector(PENDING);
    if (!slot) continue; // Python drew it meanwhile
    if (markup && markup[panel.dataset.panel] !== undefined) {
      fillSlot(slot, markup[panel.dataset.panel]);
      continue;
    }
    const note = document.createElement("p");
    note.className = "panel-note";
    note.textContent = `This picture's pre-computed version could not be downloaded (${reason || "not in "
      + "prerendered.json"}). Python draws it once it has loaded (see the status line).`;
    slot.before(note);
    missing.push(panel.dataset.panel);
  }
  if (missing.length === 0) return;
  console.warn("pre-rendered panels missing:", missing, reason);
  await Promise.all(missing.map((id) => send({ type: "redraw", value: id }))); // queued until Python is ready
}

// Show the pre-rendered panels up to and inside el, so that nothing above it grows while the page
// scrolls there.
function showPrerenderedUpTo(el) {
  return showPrerendered([...document.querySelectorAll("[data-panel]")].filter((panel) =>
    (panel.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) || el.contains(panel)));
}

async function bringIntoView(id) {
  const el = $(id) || document.querySelector(`[data-panel="${CSS.escape(id)}"]`);
  if (!el || EMBED) return;
  await showPrerenderedUpTo(el);
  for (const old of document.querySelectorAll(".is-focused-stage")) old.classList.remove("is-focused-stage");
  el.classList.add("is-focused-stage");
  const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  // the scroll that follows is the page's own, not the reader's (see scrollSettled); a panel named by a
  // link is read from its card's heading, so the card is what comes to the top
  ownTarget = el.matches("[data-panel]") ? (el.closest(".card") || el) : el;
  ownSince = performance.now();
  ownTries = 0;
  readerScrolled = false;
  scrollBelowStepper(ownTarget, smooth ? "smooth" : "auto");
}

// Scroll el's top to just below the sticky stepper bar, measured: its height depends on the width, the
// fonts and the current stage's name, and a fixed scroll-margin would hide a heading under it somewhere.
function scrollBelowStepper(el, behavior) {
  const bar = document.querySelector(".stepper-bar");
  const cover = bar && getComputedStyle(bar).position === "sticky" ? bar.getBoundingClientRect().height : 0;
  window.scrollTo({ top: Math.max(0, window.scrollY + el.getBoundingClientRect().top - cover - 8), behavior });
}

// The stepper follows the reader's scrolling: when a scroll the reader made settles, the stage whose
// section crosses the reading line (a third down the screen) becomes current. Not after the page's own
// scroll to a chosen stage (its section may stop below the line at the end of the page): that one is
// current. Nor after a scroll nobody asked for (scroll anchoring as panels appear above, a host page's
// or a script's scrolling): only the reader's wheel, touch, pointer or keys move the stepper.
let ownTarget = null, ownSince = 0, ownTries = 0; // the page's own scroll: its target, start, corrections made
let readerScrolled = false; // wheel, touch, pointer or a scrolling key since the last scroll settled
for (const type of ["wheel", "touchmove"]) {
  window.addEventListener(type, () => { readerScrolled = true; }, { passive: true });
}
// a press on the page (a scrollbar, text) may start a scroll; a press on a control does not: counting
// it took the end of the page's own scroll, still running from a stage chosen before, for the reader's
// (clicking Reset meanwhile left the stepper on the stage that scroll happened to end at)
const CONTROLS = "button, input, select, textarea, a, summary, label, [data-event], [tabindex]";
// Nor does the page correct its own scroll once the reader has pressed anything: a correction jump
// between a press and its release moves the control away from under the pointer, and the click is lost
// (traced: a stage chosen while the scroll to the one chosen before was still running, at 360 px where
// the stepper is not yet sticky; the press landed on one button, the release on a formula below it).
window.addEventListener("pointerdown", (e) => {
  if (!(e.target instanceof Element && e.target.closest(CONTROLS))) readerScrolled = true;
  ownTries = Infinity;
}, { passive: true });
window.addEventListener("keydown", (e) => {
  if (["PageUp", "PageDown", "Home", "End", "ArrowUp", "ArrowDown", " ", "Tab"].includes(e.key)
      && !(e.target.closest && e.target.closest("input, select, textarea"))) readerScrolled = true;
});
const atBottom = () => window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 4;
function scrollSettled() {
  if (ownTarget && !readerScrolled && performance.now() - ownSince < 5000) {
    const top = ownTarget.getBoundingClientRect().top;
    const arrived = (top > -8 && top < window.innerHeight / 3) || atBottom();
    if (!arrived && ownTries < 2) { // panels redrawn above it moved the target: finish the page's own scroll
      ownTries += 1;
      scrollBelowStepper(ownTarget, "auto");
      return;
    }
    ownTarget = null;
    return; // the chosen stage stays current
  }
  // The reader scrolling while the page's own scroll runs cuts that scroll short, and its scrollend comes
  // at once, before the reader's scroll has moved the page: that one ends later, in a scrollend of its own,
  // so the reader's flag stays for it (traced: a wheel during the scroll to a chosen stage; the stepper
  // followed the cut-short scroll and then stayed there, the reader's scroll not followed)
  const cutShort = ownTarget !== null && readerScrolled && performance.now() - ownSince < 5000;
  ownTarget = null;
  if (readerScrolled) followStage();
  if (!cutShort) readerScrolled = false;
}
if ("onscrollend" in window) window.addEventListener("scrollend", scrollSettled);
else { // no scrollend event (older Safari): a scroll quiet for 150 ms has settled
  let quiet = 0;
  window.addEventListener("scroll", () => { clearTimeout(quiet); quiet = setTimeout(scrollSettled, 150); }, { passive: true });
}

// the stages' sections, in order: each stepper button controls one (aria-controls)
const stageSections = () => [...document.querySelectorAll(".stepper .step[aria-controls]")]
  .map((b) => $(b.getAttribute("aria-controls")));
function followStage() {
  if (EMBED || !worker) return;
  // at the very bottom the last sections may never reach the line: then the last one on screen counts
  const line = atBottom() ? window.innerHeight - 40 : window.innerHeight / 3;
  let current = -1;
  stageSections().forEach((el, k) => { if (el && el.getBoundingClientRect().top <= line) current = k; });
  const shown = document.querySelector(".stepper [aria-current=step]");
  if (current < 0 || !shown || shown.dataset.value === String(current)) return;
  send({ type: "set_stage", value: current, follow: true });
}

// ---------------------------------------------------------------- events to Python

// One request in flight; a newer event of the same type replaces a queued one,
// so dragging a slider never builds a backlog. send() resolves once applied.
let worker = null; // the running worker, or null while one starts (at first, or after a restart)
let workerIsReady;
const workerReady = new Promise((resolve) => { workerIsReady = resolve; }); // the first worker ready
let workerWaiters = [];
function setWorker(w) {
  worker = w;
  if (w) { workerWaiters.forEach((resolve) => resolve(w)); workerWaiters = []; }
}
// the running worker, once there is one (a call made during a restart waits for the new worker)
const whenWorker = () => (worker ? Promise.resolve(worker) : new Promise((resolve) => workerWaiters.push(resolve)));
let computing = null; // the event Python is computing now (one at a time), or null
let lastHover = ""; // the last hover event sent (see hoverEvent)
// The URL follows the state (replaceState: moving a slider adds no history entries), once the reader
// pauses: each replaceState is a same-document navigation, and Chromium then fetches and decodes the
// page's icon again (~8 ms of main-thread work a slider move, traced). Whatever reads the URL
// (a link to share, a restart) takes the pending one first; a hash the reader types cancels it.
const URL_QUIET_MS = 250;
let hashTimer = 0;
let pendingHash = null; // "#..." or "" not yet in the address bar, or null
let shownHash = location.hash; // the fragment as the page last left the address bar, or the reader set it
function followState(hash) {
  pendingHash = hash ? "#" + hash : "";
  clearTimeout(hashTimer);
  hashTimer = setTimeout(flushHash, URL_QUIET_MS);
}
function flushHash() {
  clearTimeout(hashTimer);
  const want = pendingHash;
  pendingHash = null;
  // A fragment the reader set since (a pasted link, Back) wins: its hashchange event may come after this
  // (on a busy machine the timer ran first and put the old view back, so the link was never shown).
  if (location.hash !== shownHash) return;
  if (want !== null && location.hash !== want) history.replaceState(null, "", want || location.pathname + location.search);
  shownHash = location.hash;
}
function currentHash() { flushHash(); return location.hash; }
function currentHref() { flushHash(); return location.href; }
window.addEventListener("pagehide", flushHash);
document.addEventListener("visibilitychange", flushHash);
const queue = [];

// A text box's event waits for a pause in typing (150 ms). The reader's next event sends it first (typed,
// then clicked: the sentence comes first), and no reply puts the sentence Python has back in the box
// meanwhile (a stage chosen within 150 ms of the last key did: the typed sentence was lost). The page's
// own events (what is on screen, a hover's tip) leave the typing alone.
let typing = null; // the text box whose event waits, or null
let textTimer = 0;
function flushTyping() {
  clearTimeout(textTimer);
  const el = typing;
  typing = null;
  if (el) send(eventFrom(el));
}

const sentLog = []; // the last events sent (types; ":follow" for the stepper following the scroll), for tests
function send(event, fromHover = false) {
  if (typing && event.type !== typing.dataset.event && !fromHover && !isBookkeeping(event)) flushTyping();
  if (!fromHover) lastHover = ""; // any other event may change what a hover would choose
  sentLog.push(event.type + (event.follow ? ":follow" : ""));
  if (sentLog.length > 100) sentLog.shift();
  return new Promise((resolve) => {
    // a newer event replaces a queued one of its type (a slider's moves), but a redraw is per panel
    const queued = queue.find((q) => q.event.type === event.type
      && (event.type !== "redraw" || q.event.value === event.value));
    if (queued) { queued.event = event; queued.done.push(resolve); }
    else queue.push({ event, done: [resolve] });
    pump();
  });
}

async function pump() {
  if (computing || !worker || queue.length === 0) return;
  const { event, done } = queue.shift();
  computing = event;
  try {
    // the reader's code runs on a Run, and on every later change while it is in use: both are limited
    const limited = event.type === "run_code" || lastRunCode !== null;
    const w = worker;
    const res = await (limited ? dispatchWithLimit(event) : w.sync.dispatch(event));
    if (limited) await stillAnswering(w); // the reader's code may have closed the worker (js.close())
    if (event.type === "run_code" && !res.message && !event.restore) keepRanCode(event.value);
    if (event.type === "run_code" && !res.message) lastRunCode = event.value; // it ran: safe to run again
    if (event.type === "reset_code") { lastRunCode = null; lastLimitedMs = 0; forgetCode(); }
    applyResponse(res, event);
  } catch (err) {
    const gone = err instanceof PythonGone || PYTHON_ENDED.test(String((err && err.message) || err));
    if (err instanceof CodeTimeout || gone) {
      // a new function that hangs or ends Python: the last one that ran comes back; the function in use
      // doing it on a later change (a slider, a sentence): it is switched off, or the restart would do it again
      const culprit = event.type !== "run_code";
      if (culprit) lastRunCode = null;
      // not awaited: the restart's own events (the model's link replayed, the last good function) go through
      // this queue once the new worker is in; the reader's wait meanwhile (pump needs a worker)
      restartPython(gone ? endedMessage(err, culprit) : timeoutMessage(culprit));
      return;
    }
    console.warn("dispatch failed", err);
    $("input-message").textContent = "Something went wrong computing that view; the last good picture stays. ("
      + String(err.message || err).split("\n").filter(Boolean).pop() + ")";
  } finally {
    computing = null;
    done.forEach((resolve) => resolve());
    pump();
  }
}

// ---------------------------------------------------------------- your attention function (issue 12)

// Python cannot be interrupted from here (that needs cross-origin isolation, which GitHub Pages cannot
// give), so a reader's function that runs too long is stopped by replacing the worker: the page starts
// Python again (seconds) with the last good state, which the URL holds.
const CODE_LIMIT_MS = 2000;
class CodeTimeout extends Error {}
let lastRunCode = null; // the reader's last function that ran (Run, not a link): run again after a restart
let reportViewport = () => {}; // tells a new worker what is on screen (set by the viewport observer below)
let printing = false; // printEverything is drawing every panel

// The limit grows with the work the reader's function is given: on a trained model (one downloaded on
// demand) one change runs it over 72 heads, up to three times (ablation, a second sentence), which takes
// seconds on a slow machine and is no endless loop. A hang is still stopped: after 2 s (10 s on a trained
// model), or 5x the last limited change that finished, whichever is longer.
let lastLimitedMs = 0;
let lastLimitMs = CODE_LIMIT_MS; // the limit the last timeout hit, for its message
function dispatchWithLimit(event) {
  let timer;
  const trained = (event.type === "set_model" ? event.value : shownModel) in MODEL_FILES;
  const ms = Math.max(trained ? 5 * CODE_LIMIT_MS : CODE_LIMIT_MS, 5 * lastLimitedMs), t0 = performance.now();
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => { lastLimitMs = ms; reject(new CodeTimeout("timeout")); }, ms);
  });
  const done = worker.sync.dispatch(event).then((res) => { lastLimitedMs = performance.now() - t0; return res; });
  return Promise.race([done, limit]).finally(() => clearTimeout(timer));
}

// Python gone: the reader's code ended it (os._exit, a fatal error) or closed its worker (js.close()).
// A call then fails with one of Pyodide's own messages, or the worker stops answering.
const PYTHON_ENDED = /Program terminated|already exited|fatal error/i;
class PythonGone extends Error {}
const ANSWER_MS = 3000; // a worker that answers nothing for this long after the reader's code ran is gone
function stillAnswering(w) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new PythonGone("Python stopped answering (did the function close its worker?)")),
      ANSWER_MS);
  });
  return Promise.race([w.sync.download_progress(), limit]).finally(() => clearTimeout(timer));
}

const restartTail = (switchedOff) => (switchedOff
  ? "started again with the page's own attention function."
  : "started again; the pictures show the last function that worked.");
function timeoutMessage(switchedOff) {
  return `Your function ran for more than ${Math.round(lastLimitMs / 100) / 10} s (an endless loop?), so Python was `
    + "stopped and " + restartTail(switchedOff);
}
function endedMessage(err, switchedOff) {
  const why = String((err && err.message) || err).split("\n").filter(Boolean)[0] || "it stopped";
  return `Your function ended the page's Python (${why.slice(0, 120)}), so Python was ` + restartTail(switchedOff);
}

// A new worker in place of one that hangs or is gone, with the last good state (the URL holds it): the
// trained model back from Cache Storage if it was in use, then the reader's last good function run again.
// The editor keeps the reader's code throughout; `said` stays under it.
async function restartPython(said) {
  const stopped = worker;
  setWorker(null); // events wait in the queue meanwhile
  installed.clear(); // the new worker has no trained model yet: it comes back from Cache Storage
  loading = null; // a download the old worker was making ends with it (chooseModel hears it: modelRestart)
  modelRestart();
  try { stopped.terminate(); } catch (err) { console.warn("could not stop the worker", err); }
  root.dataset.state = "loading";
  statusBox.classList.remove("is-ready", "is-error");
  lastLimitedMs = 0; // the next limit starts from 2 s again
  $("attention-code-message").textContent = said;
  progress("Python stopped; starting it again…", 0);
  try {
    const w = await launch(currentHash(), startWorker(), { restart: true });
    setWorker(w);
    pump(); // events that waited for the new worker
    await modelComing; // the link's trained model, installed and replayed (see applyResponse)
    if (lastRunCode !== null) await send({ type: "run_code", value: lastRunCode, restore: true });
    root.dataset.state = "ready";
    statusBox.classList.add("is-ready");
    progress("Python is running again: every change you make is computed live in your browser.", STEPS);
    $("attention-code-message").textContent = said;
    reportViewport();
    warmUp(w);
  } catch (err) {
    console.warn("restart failed", err);
    fail("Python could not be started again; reload the page. (" + String(err.message || err).split("\n")[0] + ")");
  }
}

// The reader's code is theirs: what they type stays in the editor through restarts, Reset and reloads
// (kept per page in local storage until the editor's own Reset), and the function they last ran is
// remembered so that reloading their own page is not taken for a link carrying someone's code.
const CODE_KEY = `attention-explorer:code:${location.pathname}`;
function stored(key) {
  try { return localStorage.getItem(key); } catch { return null; } // storage refused: nothing kept
}
function store(key, value) {
  try { if (value === null) localStorage.removeItem(key); else localStorage.setItem(key, value); } catch { /* refused */ }
}
const keepDraft = () => store(CODE_KEY + ":draft", codeText());
const keepRanCode = (code) => store(CODE_KEY + ":ran", code);
function forgetCode() { store(CODE_KEY + ":draft", null); store(CODE_KEY + ":ran", null); }
// after the first reply: the reader's draft back in the editor, unless the link brought code of its own
function restoreDraft(reply) {
  const draft = stored(CODE_KEY + ":draft");
  if (draft !== null && $("attention-code") && !(reply.values && "attention-code" in reply.values)) setCodeText(draft);
}

function codeText() {
  return $("attention-code").value; // editor.js keeps it equal to the editor's document
}
function runCode() { send({ type: "run_code", value: codeText() }); }

if ($("run-code")) {
  $("run-code").addEventListener("click", runCode);
  $("reset-code").addEventListener("click", () => send({ type: "reset_code" }));
  // typed in the plain text box (a real input event) or in CodeMirror (editor.js's "reader-edit")
  $("attention-code").addEventListener("input", (e) => { if (e.isTrusted) keepDraft(); });
  $("attention-code").addEventListener("reader-edit", keepDraft);
  $("attention-code").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); runCode(); }
  });
  const data = JSON.parse($("editor-files").textContent || "{}");
  $("code-edit").addEventListener("change", (e) => { // a ready-made edit goes into the editor; nothing runs
    const edit = (data.edits && data.edits.edits || {})[e.target.value];
    setCodeText(edit ? edit.source : data.edits.original);
    keepDraft();
    $("code-look-for").textContent = edit ? edit.look_for : "";
  });
  // CodeMirror, from PyScript's bundle, only once the editor is on screen and Python is ready (editor.js).
  // No margin: at first paint the panels above are still inert templates, so the page is short and
  // the editor would count as near and cost the first screen its main thread.
  workerReady.then(() => new IntersectionObserver((entries, obs) => {
    if (!entries.some((e) => e.isIntersecting)) return;
    obs.disconnect();
    import("./editor.js").then((m) => m.upgrade($("attention-code"), data.files, runCode))
      .catch((err) => console.warn("the code editor could not load; the plain text box stays", err));
  }).observe($("code-card")));
}

function setCodeText(text) {
  const el = $("attention-code");
  if (!el || el.value === text) return; // the embed page has no editor
  el.value = text;
  el.dispatchEvent(new Event("input", { bubbles: false })); // editor.js follows
}

function eventFrom(el) {
  const event = { type: el.dataset.event };
  if (el.dataset.toggle !== undefined) event.toggle = el.dataset.toggle; // flips one member of a set
  if (el.dataset.tokenIndex !== undefined) event.index = el.dataset.tokenIndex;
  if (el.dataset.value !== undefined) event.value = el.dataset.value;
  else if (el.type === "checkbox") event.value = el.checked;
  else if ("value" in el && el.tagName !== "BUTTON") event.value = el.value;
  return event;
}

// A cell of a grid whose group names an event (data-cell-event, e.g. the heatmap's pick_cell "i,j").
function cellEvent(target) {
  const group = target.closest && target.closest("[data-cell-event]");
  const cell = group && target.closest("[data-i][data-j]");
  if (!cell || cell.dataset.masked) return null;
  return { type: group.dataset.cellEvent, value: `${cell.dataset.i},${cell.dataset.j}` };
}

document.addEventListener("click", (e) => {
  const action = e.target.closest("[data-action]");
  if (action) { runAction(action.dataset.action, action.dataset.target); return; }
  const picked = cellEvent(e.target);
  if (picked) { send(picked); return; }
  const el = e.target.closest("[data-event]");
  if (!el || el.matches("input, select")) return;
  if (pinning(e, el)) return;
  send(eventFrom(el));
});
// Shift/Ctrl/Cmd-click (or Shift+Enter) on a token pins it as one more query instead of choosing it
function pinning(e, el) {
  if (!(e.shiftKey || e.ctrlKey || e.metaKey) || !el.dataset.pinEvent) return false;
  e.preventDefault();
  send({ type: el.dataset.pinEvent, toggle: el.dataset.tokenIndex });
  return true;
}
document.addEventListener("input", (e) => {
  const el = e.target.closest("[data-event]");
  if (!el || el.type === "checkbox" || el.tagName === "SELECT") return;
  if (el.type === "text") {
    clearTimeout(textTimer); // wait for a pause in typing (see flushTyping)
    typing = el;
    textTimer = setTimeout(flushTyping, 150);
  } else {
    send(eventFrom(el));
  }
});
// A long table of numbers waits as an inert <template data-on-open> in a <details> (markup.table_on_request):
// it joins the page when a reader opens it; if a patch has changed the numbers since it was drawn
// (data-stale, see applyPatch), Python draws the panel anew (the <details> reopens, data-keep).
// toggle does not bubble, hence the capture.
document.addEventListener("toggle", (e) => {
  const details = e.target;
  if (!(details instanceof HTMLDetailsElement) || !details.open) return;
  const waiting = details.querySelector(":scope > template[data-on-open]");
  if (!waiting) return;
  const panel = details.closest("[data-panel]");
  if (waiting.dataset.stale && panel) send({ type: "redraw", value: panel.dataset.panel });
  else waiting.replaceWith(waiting.content);
}, true);
document.addEventListener("change", (e) => {
  const el = e.target.closest("select[data-event], input[type=checkbox][data-event]");
  if (el && el.id === "model") chooseModel(el.value);
  else if (el) send(eventFrom(el));
});

// ---------------------------------------------------------------- trained models, on demand

// build.py's manifest of models whose files are downloaded only when chosen: {id: {src, bytes, modules}}.
const MODEL_FILES = JSON.parse(($("model-files") && $("model-files").textContent) || "{}");
const installed = new Set();
let loading = null; // the model being downloaded, with its promise
let shownModel = "";  // the model of the last response (the #model value the state has)

function downloadUi(text, { value = null, max = 1, failed = false } = {}) {
  const box = $("model-download");
  if (!box) { // the embed page has no form: the status line speaks
    $("runtime-status-text").textContent = text;
    return;
  }
  box.hidden = !text;
  box.classList.toggle("is-error", failed);
  $("model-download-text").textContent = text;
  const bar = $("model-progress");
  bar.hidden = failed || value === null;
  if (value !== null) { bar.max = max; bar.value = value; }
  $("model-retry").hidden = !failed;
}

const megabytes = (n) => (n / 1e6).toFixed(1);

// Choose a model; one whose files are still to come is downloaded first (by the worker, with
// progress), meanwhile the page stays on the current model and works. replayHash: a link to replay
// once the model is there (it named the model). switchTo false: only download (the comparison card).
// The reader's last choice wins: a model chosen while another downloads is shown at once, and the
// download, when it ends, switches nothing. restore: the replay is the page's own after a restart.
let choice = null; // the reader's (or a link's) last choice: {id, replayHash, restore}
let modelComing = null; // the download a reply asked for (applyResponse), for the restart to wait on
let modelRestart = () => {}; // ends the wait for a download the stopped worker was making
async function chooseModel(id, replayHash = null, switchTo = true, restore = false) {
  const spec = MODEL_FILES[id];
  if (switchTo) choice = { id, replayHash, restore };
  // once the files are in: switch to the model (or replay the link) if it is still the last choice
  const then = () => {
    // only downloading, or another model chosen since: the comparison card can use it now
    if (!switchTo || choice === null || choice.id !== id) return send({ type: "redraw", value: "compare" });
    const { replayHash: hash, restore: own } = choice;
    choice = null;
    return send(hash !== null ? { type: "load_hash", value: hash, ...(own ? { restart: true, restore: true } : {}) }
      : { type: "set_model", value: id });
  };
  if (!spec || installed.has(id)) { await then(); return; }
  if (loading && loading.id === id) { // already on its way: the choice above is what happens when it ends
    await loading.done.catch(() => {});
    return;
  }
  if (loading) await loading.done; // another model first (one download at a time)
  const w = await whenWorker();
  const base = new URL(".", document.baseURI).href;
  const total = spec.bytes;
  downloadUi(`Downloading the trained model: 0 of ${megabytes(total)} MB…`, { value: 0, max: total });
  const poll = setInterval(async () => {
    const p = await w.sync.download_progress();
    if (p.phase === "download") {
      downloadUi(`Downloading the trained model: ${megabytes(p.loaded)} of ${megabytes(total)} MB…`,
        { value: p.loaded, max: total });
    } else if (p.phase === "verify") {
      downloadUi("Checking the trained model's file…", { value: total, max: total });
    } else if (p.phase === "install") {
      downloadUi("Unpacking the trained model's weights…", { value: total, max: total });
    }
  }, 250);
  // a restart ends the worker and its download: the wait ends with it (the restart chooses again)
  const stopped = new Promise((resolve) => { modelRestart = () => resolve({ ok: false, restarted: true }); });
  const mine = { id, done: Promise.race([w.sync.load_model({ ...spec, model: id, base }), stopped]) };
  loading = mine;
  let result;
  try {
    result = await mine.done;
  } catch (err) {
    result = { ok: false, message: `Could not load the trained model (${String(err.message || err).split("\n")[0]}).` };
  } finally {
    clearInterval(poll);
    if (loading === mine) loading = null;
  }
  if (result.restarted) { downloadUi(""); return; }
  if (result.ok) {
    installed.add(id);
    downloadUi("");
    await then();
  } else {
    downloadUi(result.message, { failed: true });
    if (choice && choice.id === id) choice = null;
    if ($("model")) $("model").value = shownModel; // still the model the page shows
    retryModel = () => chooseModel(id, replayHash, switchTo, restore);
  }
}
let retryModel = null;
if ($("model-retry")) $("model-retry").addEventListener("click", () => { if (retryModel) retryModel(); });
window.addEventListener("hashchange", () => {
  clearTimeout(hashTimer); // the reader's own hash wins over a pending update
  pendingHash = null;
  shownHash = location.hash;
  send({ type: "load_hash", value: location.hash });
});

// Which panels are on or near the screen: Python draws those at once and the others when
// they come into view (a slider then redraws two or three panels, not all of them).
if (!EMBED) {
  const near = new Set(); // mirrors the DOM's intersection state; not application state
  let viewportTimer = 0;
  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) {
      (e.isIntersecting ? near.add : near.delete).call(near, e.target.dataset.panel);
      if (e.isIntersecting) showPrerendered([e.target]);
    }
    clearTimeout(viewportTimer);
    viewportTimer = setTimeout(reportViewport, 60);
  }, { rootMargin: "50% 0px" });
  // (not while printEverything waits for every panel: a newer "viewport" would replace its event)
  reportViewport = () => printing || send({ type: "viewport", value: [...near] });
  for (const el of document.querySelectorAll("[data-panel]")) observer.observe(el);
}

// ---------------------------------------------------------------- print

// A panel off screen when its inputs changed keeps its old picture until it comes near (Python's
// "stale" list, in every reply): marked data-outdated, which a printout shows as "not drawn".
function markOutdated(ids) {
  const stale = new Set(ids);
  for (const el of document.querySelectorAll("[data-panel]")) {
    const outdated = stale.has(el.dataset.panel);
    if (el.hasAttribute("data-outdated") !== outdated) el.toggleAttribute("data-outdated", outdated);
  }
}

const PRINT_WAIT_MS = 15000; // drawing every panel takes a second or two; past this, print what is there

// Print (the footer's button, Ctrl+P / Cmd+P): every panel drawn for the current state first, as a reader
// who scrolled through the page would see it, then the browser's print dialog; then Python goes back to
// drawing only what is on screen. A print from the browser's menu cannot wait: it prints what is drawn,
// and the panels not drawn say how to print them (style.css, @media print).
async function printEverything() {
  const button = $("print-all");
  if (printing) return;
  printing = true;
  if (button) { button.disabled = true; button.textContent = "Drawing every picture…"; }
  try {
    const panels = [...document.querySelectorAll("[data-panel]")];
    await showPrerendered(panels);
    if (root.dataset.state !== "error") {
      let waited = 0;
      const limit = new Promise((resolve) => { waited = setTimeout(resolve, PRINT_WAIT_MS); });
      await Promise.race([send({ type: "viewport", value: panels.map((el) => el.dataset.panel) }), limit]);
      clearTimeout(waited);
    }
  } finally {
    if (button) { button.disabled = false; button.textContent = "Print every picture"; }
  }
  try {
    window.print(); // returns when the dialog closes
  } finally {
    printing = false;
    reportViewport();
  }
}

// A print from the browser's menu: what can be shown at once is, the pre-rendered pictures of panels
// never near the screen that are still the current state's (not data-outdated).
window.addEventListener("beforeprint", () => {
  if (printing || !prerenderedMarkup) return;
  for (const panel of document.querySelectorAll("[data-panel]:not([data-outdated])")) {
    const slot = panel.querySelector(PENDING);
    const markup = prerenderedMarkup[panel.dataset.panel];
    if (slot && markup !== undefined) fillSlot(slot, markup);
  }
});

if (!EMBED) {
  $("print-all")?.addEventListener("click", printEverything);
  document.addEventListener("keydown", (e) => {
    if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === "p") {
      e.preventDefault();
      printEverything();
    }
  });
}

// ---------------------------------------------------------------- share and export

function showShare(title, hint, text) {
  $("share-title").textContent = title;
  $("share-hint").textContent = hint;
  $("share-text").value = text;
  $("share-status").textContent = "";
  $("share-dialog").showModal();
  $("share-text").select();
  $("share-text").scrollTop = 0;
}

async function copyShareText() {
  try {
    await navigator.clipboard.writeText($("share-text").value);
    $("share-status").textContent = "Copied.";
  } catch {
    $("share-text").select();
    $("share-status").textContent = "Press Ctrl+C (⌘C) to copy the selected text.";
  }
}

async function runAction(action, target) {
  if (action === "load-model") { chooseModel(target, null, false); return; }
  if (!worker) { // a link, a snippet, a file and a figure's caption all come from Python's state
    notify("Sharing and export work once Python has loaded (see the status line).");
    return;
  }
  try {
    await send({ type: "set_panel", value: target }); // the link and files name this panel
    if (action === "link") {
      showShare("Link to this view", "Opening it restores the sentence, query, head, sliders and this panel.", currentHref());
    } else if (action === "embed") {
      showShare("Embed this panel", "Paste into your page's HTML. The <script> sizes the frame; include it once per page.",
        await worker.sync.embed_snippet(currentHref()));
    } else {
      const ex = await import("./export.js");
      if (action === "svg" || action === "png") {
        // the figure's title and caption (sentence, model, head, settings) as plain text from Python
        const caption = await worker.sync.export_caption(target);
        const svg = await ex.panelToSvgText(document.querySelector(`[data-panel="${target}"]`), { caption });
        if (action === "svg") ex.download(svg, `attention-explorer-${target}.svg`, "image/svg+xml");
        else ex.download(await ex.svgTextToPngBlob(svg), `attention-explorer-${target}.png`, "image/png");
      } else {
        const file = await worker.sync.export_data(action);
        ex.download(file.text, file.filename, file.mime);
      }
    }
  } catch (err) {
    console.warn("action failed", err);
    notify(`Could not ${action === "link" || action === "embed" ? "share" : "export"} this panel: ${String(err.message || err).split("\n")[0]}`);
  }
}

if ($("share-copy")) $("share-copy").addEventListener("click", copyShareText);

// ---------------------------------------------------------------- tooltips and keys

// Any element with data-tip (text written by the Python views) shows it on hover
// or keyboard focus. Text only, via textContent.
const tip = document.createElement("div");
tip.id = "tooltip";
tip.setAttribute("role", "tooltip");
tip.hidden = true;
// inside the page's main landmark (axe: all content in landmarks); absolutely placed in page coordinates,
// which holds while <main> is not positioned (style.css)
(document.querySelector("main") || document.body).append(tip);

function showTip(el) {
  tip.textContent = el.dataset.tip;
  tip.hidden = false;
  const r = el.getBoundingClientRect();
  const w = tip.offsetWidth, h = tip.offsetHeight;
  const left = Math.min(Math.max(8, r.left + r.width / 2 - w / 2), window.innerWidth - w - 8);
  const top = r.top - h - 8 >= 0 ? r.top - h - 8 : r.bottom + 8;
  tip.style.left = `${left + window.scrollX}px`;
  tip.style.top = `${top + window.scrollY}px`;
  el.setAttribute("aria-describedby", "tooltip");
}
const hideTip = () => { tip.hidden = true; };
// Hovering or focusing an element with data-hover-event sends that event (e.g. a heatmap cell of
// the query's row chooses the key the Q·K breakdown takes apart); repeats of the last one are skipped.
function hoverEvent(el, value = el.dataset.hoverValue ?? el.dataset.value) {
  const event = { type: el.dataset.hoverEvent, value };
  const key = `${event.type}:${event.value}`;
  if (!worker || key === lastHover) return;
  lastHover = key;
  send(event, true);
}
// Live heatmaps and LayerNorm charts leave their cells' long derivations out of the markup (data-tip-src): ask the worker.
let tipFor = null;
async function showTipFromWorker(el) {
  tipFor = el;
  if (!worker) return hideTip();
  const panel = el.closest("[data-panel]");
  const block = el.closest("[data-block]");
  const text = await worker.sync.tip({ panel: panel && panel.dataset.panel, i: el.dataset.i, j: el.dataset.j,
                                       block: block ? block.dataset.block : "" });
  if (tipFor !== el || !el.isConnected || !text) return;
  el.dataset.tip = text; // until the next redraw replaces the element
  showTip(el);
}
for (const type of ["pointerover", "focusin"]) {
  document.addEventListener(type, (e) => {
    const el = e.target.closest && e.target.closest("[data-tip], [data-tip-src]");
    tipFor = null;
    if (el && el.dataset.tip) showTip(el);
    else if (el) showTipFromWorker(el);
    else hideTip();
    const hover = e.target.closest && e.target.closest("[data-hover-event]");
    if (hover && hover.dataset.hoverRow !== undefined) {
      // a grid whose one row picks: a cell of that row sends its column (the heatmap's query row -> key)
      const cell = e.target.closest("[data-i][data-j]");
      if (cell && cell.dataset.i === hover.dataset.hoverRow && !cell.dataset.masked) hoverEvent(hover, cell.dataset.j);
    } else if (hover) hoverEvent(hover);
  });
}

document.addEventListener("keydown", (e) => {
  if (e.key === "Escape") hideTip();
  if (!e.target.closest) return;
  // Enter or Space on a focusable picture element with an event (a heatmap cell, a bar) acts as a click;
  // buttons, links and form controls do that by themselves.
  if (e.key === "Enter" && e.shiftKey) {
    const el = e.target.closest("[data-pin-event]");
    if (el && pinning(e, el)) return;
  }
  if (e.key === "Enter" || e.key === " ") {
    const picked = cellEvent(e.target)
      || (e.target.matches("[data-event]:not(button, a, input, select, textarea)") && eventFrom(e.target));
    if (picked) { e.preventDefault(); send(picked); return; }
  }
  // Left/Right inside a [data-arrow-keys] widget (the stepper) press its prev/next buttons.
  const widget = e.target.closest("[data-arrow-keys]");
  if (widget && (e.key === "ArrowLeft" || e.key === "ArrowRight")) {
    const btn = widget.querySelector(`[data-arrow="${e.key === "ArrowLeft" ? "prev" : "next"}"]`);
    if (btn && !btn.disabled) { e.preventDefault(); send(eventFrom(btn)); }
    return;
  }
  // Arrow keys move focus within a grid of cells (data-i / data-j), e.g. a heatmap.
  const cell = e.target.closest("[data-grid-cell]");
  const step = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
  if (!cell || !step) return;
  const grid = cell.closest("[data-grid]");
  const next = grid && grid.querySelector(
    `[data-grid-cell][data-i="${Number(cell.dataset.i) + step[0]}"][data-j="${Number(cell.dataset.j) + step[1]}"]`);
  if (next) {
    e.preventDefault();
    cell.setAttribute("tabindex", "-1");
    next.setAttribute("tabindex", "0");
    next.focus();
  }
});

// ---------------------------------------------------------------- embed sizing

if (EMBED && window.parent !== window) {
  // The host page sizes the iframe from this message (see README, "Host it and embed it").
  const report = () => window.parent.postMessage(
    { type: "attention-explorer:height", height: Math.ceil(document.body.getBoundingClientRect().height) }, "*");
  new ResizeObserver(report).observe(document.body);
}

// ---------------------------------------------------------------- start-up

// A worker being started (launch.js: Pyodide, NumPy and our start-up modules; the first one began as
// this module was loaded), then the page's state from the link (hash); its first reply applied.
// restart: the link is the page's own (after a restart), so its code is no stranger's.
async function launch(hash, starting, { restart = false } = {}) {
  const w = await starting;
  progress("Computing attention in Python…", 3);
  modelComing = null;
  // own_code: the function the reader last ran here; a link carrying it is the reader's own page reloaded
  const reply = await w.sync.boot(hash, EMBED ? "embed" : "page", { restart, own_code: stored(CODE_KEY + ":ran") || "" });
  applyResponse(reply, restart ? { type: "boot", restore: true } : null);
  if (!restart) restoreDraft(reply);
  return w;
}

async function start() {
  const timer = setTimeout(() => {
    if (root.dataset.state === "loading")
      fail("Python did not start within 3 minutes. The pictures are the pre-computed default; reload to try again.");
  }, BOOT_TIMEOUT_MS);
  try {
    const w = await launch(location.hash, firstWorker);
    setWorker(w);
    workerIsReady();
    // A handle for tests and for curious readers in the console: call the worker's exports.
    globalThis.attentionExplorer = { call: (name, arg) => worker.sync[name](arg), sent: sentLog,
                                      urlPending: () => pendingHash !== null,
                                      idle: () => Boolean(worker) && !computing && queue.length === 0 && !typing,
                                      waiting: () => ({ computing: computing && computing.type,
                                                        queued: queue.map((q) => q.event.type),
                                                        typing: Boolean(typing), warming: Boolean(warming) }) };
    progress("Python is running: every change you make is computed live in your browser.", STEPS);
    statusBox.classList.add("is-ready");
    root.dataset.state = "ready";
    loadPrerendered().catch(() => {}); // the panels below, ahead of the reader's scrolling (a failure shows there)
    // the views start-up left for later: loaded now, ahead of any event (the worker takes calls in order)
    warmUp(w);
    pump(); // events made while loading
  } catch (err) {
    console.warn("runtime failed to start", err);
    // a Python exception's message is its traceback: its last line says what went wrong
    const lines = String(err && err.message ? err.message : err).split("\n").map((l) => l.trim()).filter(Boolean);
    const reason = lines[0] && lines[0].startsWith("Traceback")
      ? lines[lines.length - 1].replace(/^\w*Error: /, "") : lines[0];
    fail(`Python could not start (${reason}), so the view stays as it was pre-computed. Reload the page to `
      + "try again; if it keeps failing, check the connection or try another browser.");
  } finally {
    clearTimeout(timer);
  }
}

start();
