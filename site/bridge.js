// The main-thread bridge: starts the Python worker, forwards events, swaps markup.
//
// It holds no state and no mathematics. Python (py/attention_explorer/worker.py,
// in a PyScript worker so the page never freezes) owns the state and returns
// {panels: {id: markup}, values: {id: value}, message, field}. Panel markup comes
// from the project's own Python views, which escape every piece of reader text;
// the bridge never builds markup from reader or URL text (messages go in via
// textContent).
//
// Readiness hook for tests and embeds: <html data-state="loading|ready|error">.

const root = document.documentElement;
const statusBox = document.getElementById("runtime-status");
const statusText = document.getElementById("runtime-status-text");
const statusBar = document.getElementById("runtime-progress");
const STEPS = 3;
const BOOT_TIMEOUT_MS = 180000; // a slow phone may take a minute; after this, say so

function progress(text, step) {
  statusText.textContent = text;
  statusBar.value = step;
  statusBar.max = STEPS;
}

function fail(message) {
  root.dataset.state = "error";
  statusBox.classList.add("is-error");
  statusText.textContent = message;
  statusBar.hidden = true;
}

function applyResponse(res) {
  for (const [id, markup] of Object.entries(res.panels || {})) {
    const el = document.querySelector(`[data-panel="${id}"]`);
    if (!el) throw new Error(`the page has no panel "${id}"`);
    el.innerHTML = markup; // trusted: rendered by our Python views, all text escaped there
  }
  for (const [id, value] of Object.entries(res.values || {})) {
    const el = document.getElementById(id);
    if (!el) continue;
    if (el.type === "checkbox") el.checked = Boolean(value);
    else if (el.type === "text" && el === document.activeElement) continue; // never fight the caret
    else if (el.value !== String(value)) el.value = String(value);
  }
  if (res.focus) {
    // the stepper chose a stage: bring its section into view and mark it current
    const section = document.getElementById(res.focus);
    for (const el of document.querySelectorAll(".is-focused-stage")) el.classList.remove("is-focused-stage");
    if (section) {
      section.classList.add("is-focused-stage");
      const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
      section.scrollIntoView({ behavior: smooth ? "smooth" : "auto", block: "start" });
    }
  }
  const msg = document.getElementById("input-message");
  msg.textContent = res.message || "";
  for (const el of document.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  if (res.message) {
    const field = document.getElementById(res.field === "tokens" ? "tokens" : res.field);
    if (field) field.setAttribute("aria-invalid", "true");
  }
}

// One request in flight; a newer event of the same type replaces a queued one,
// so dragging a slider never builds a backlog.
let worker = null;
let busy = false;
const queue = [];

function send(event) {
  const i = queue.findIndex((e) => e.type === event.type);
  if (i >= 0) queue[i] = event;
  else queue.push(event);
  pump();
}

async function pump() {
  if (busy || !worker || queue.length === 0) return;
  busy = true;
  const event = queue.shift();
  try {
    applyResponse(await worker.sync.dispatch(event));
  } catch (err) {
    console.warn("dispatch failed", err);
    document.getElementById("input-message").textContent =
      "Something went wrong computing that view; the last good picture stays. (" + String(err.message || err).split("\n").pop() + ")";
  } finally {
    busy = false;
    pump();
  }
}

function eventFrom(el) {
  const event = { type: el.dataset.event };
  if (el.dataset.tokenIndex !== undefined) event.index = el.dataset.tokenIndex;
  if (el.dataset.value !== undefined) event.value = el.dataset.value;
  else if (el.type === "checkbox") event.value = el.checked;
  else if ("value" in el && el.tagName !== "BUTTON") event.value = el.value;
  return event;
}

let textTimer = 0;
document.addEventListener("click", (e) => {
  const el = e.target.closest("[data-event]");
  if (!el || el.matches("input, select")) return;
  send(eventFrom(el));
});
document.addEventListener("input", (e) => {
  const el = e.target.closest("[data-event]");
  if (!el || el.type === "checkbox" || el.tagName === "SELECT") return;
  if (el.type === "text") {
    clearTimeout(textTimer); // wait for a pause in typing
    textTimer = setTimeout(() => send(eventFrom(el)), 150);
  } else {
    send(eventFrom(el));
  }
});
document.addEventListener("change", (e) => {
  const el = e.target.closest("select[data-event], input[type=checkbox][data-event]");
  if (el) send(eventFrom(el));
});

// Files the worker needs. Checked from the main thread while the worker boots,
// because a missing file makes Pyodide's start-up hang inside the worker rather
// than fail; this way the reader gets a message naming the file at once.
const RUNTIME_FILES = ["vendor/pyodide/pyodide.mjs", "vendor/pyodide/pyodide.asm.js",
  "vendor/pyodide/pyodide.asm.wasm", "vendor/pyodide/python_stdlib.zip", "vendor/pyodide/pyodide-lock.json"];

async function preflight() {
  if (typeof WebAssembly !== "object") throw new Error("this browser has no WebAssembly");
  await Promise.all(RUNTIME_FILES.map(async (path) => {
    const res = await fetch(path, { method: "HEAD", cache: "no-store" });
    if (!res.ok) throw new Error(`could not download ${path} (HTTP ${res.status})`);
  }));
}

async function start() {
  const timer = setTimeout(() => {
    if (root.dataset.state === "loading")
      fail("Python did not start within 3 minutes. The pictures above are the pre-computed default; reload to try again.");
  }, BOOT_TIMEOUT_MS);
  try {
    progress("Loading the Python runtime (Pyodide, about 9 MB)…", 0);
    const { PyWorker } = await import("./vendor/pyscript/core.js");
    const config = document.getElementById("worker-config").textContent;
    const version = new URL("./vendor/pyodide/pyodide.mjs", document.baseURI).href;
    const [w] = await Promise.all([
      PyWorker("./py/attention_explorer/worker.py", { type: "pyodide", version, config }),
      preflight(),
    ]);
    progress("Loading NumPy…", 1);
    await w.sync.load_numpy();
    progress("Computing attention in Python…", 2);
    applyResponse(await w.sync.boot());
    worker = w;
    progress("Python is running: every number below is computed live in your browser.", 3);
    statusBox.classList.add("is-ready");
    root.dataset.state = "ready";
    pump(); // events made while loading
  } catch (err) {
    console.warn("runtime failed to start", err);
    fail("Python could not start in this browser, so the view above stays as it was pre-computed. (" +
      String(err && err.message ? err.message : err).split("\n")[0] + ")");
  } finally {
    clearTimeout(timer);
  }
}

start();

// Tooltips: any element with data-tip (text written by the Python views) shows it
// on hover or keyboard focus. Text only, via textContent.
const tip = document.createElement("div");
tip.id = "tooltip";
tip.setAttribute("role", "tooltip");
tip.hidden = true;
document.body.append(tip);

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
function hideTip() { tip.hidden = true; }
document.addEventListener("pointerover", (e) => {
  const el = e.target.closest && e.target.closest("[data-tip]");
  if (el) showTip(el); else hideTip();
});
document.addEventListener("focusin", (e) => {
  const el = e.target.closest && e.target.closest("[data-tip]");
  if (el) showTip(el); else hideTip();
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape") hideTip();
  // Left/Right inside a [data-arrow-keys] widget (the stepper) press its prev/next buttons.
  const widget = e.target.closest && e.target.closest("[data-arrow-keys]");
  if (widget && (e.key === "ArrowLeft" || e.key === "ArrowRight")) {
    const btn = widget.querySelector(`[data-arrow="${e.key === "ArrowLeft" ? "prev" : "next"}"]`);
    if (btn && !btn.disabled) {
      e.preventDefault();
      send(eventFrom(btn));
    }
    return;
  }
  // Arrow keys move focus within a grid of cells (data-i / data-j), e.g. a heatmap.
  const cell = e.target.closest && e.target.closest("[data-grid-cell]");
  if (!cell || !["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"].includes(e.key)) return;
  const di = { ArrowUp: -1, ArrowDown: 1 }[e.key] || 0;
  const dj = { ArrowLeft: -1, ArrowRight: 1 }[e.key] || 0;
  const grid = cell.closest("[data-grid]");
  const next = grid && grid.querySelector(
    `[data-grid-cell][data-i="${Number(cell.dataset.i) + di}"][data-j="${Number(cell.dataset.j) + dj}"]`);
  if (next) {
    e.preventDefault();
    cell.setAttribute("tabindex", "-1");
    next.setAttribute("tabindex", "0");
    next.focus();
  }
});
