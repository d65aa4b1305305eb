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
    const w = await PyWorker("./py/attention_explorer/worker.py", { type: "pyodide", version, config });
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
