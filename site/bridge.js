// The main-thread bridge: starts the Python worker, forwards events, swaps markup. This file is its
// entry (index.html and embed.html load it as a module) and its start-up; each other job is a module of
// ./bridge/, one job each, its state named in its header.
//
// Python (py/attention_explorer/worker.py, reached through worker_main.py in a PyScript worker so the
// page never freezes) owns the application's state and computes everything. The bridge's own state is
// bookkeeping about the page and the worker: what is queued, the address bar, the scroll, a download, a
// print. Panel markup comes from the project's own Python views, which escape every piece of reader
// text; the bridge never builds markup from reader or URL text (messages, notices and share text go in
// via textContent / .value).
//
// The redraw protocol, from the bridge's side. An event is {type, value?, index?, toggle?} read from a
// control's data-* hooks (bridge/event-from.js), plus follow (the stepper following the scroll) and
// restore / restart (the page's own events after a restart). The queue (bridge/queue.js) sends one at a
// time to the worker's dispatch(event); boot(hash, mode, options) gives the first reply. A reply is
// applied by bridge/apply.js:
//   panels     {panel id: markup}: each [data-panel] element's content replaced (a <details data-keep>
//              the reader opened stays open; the keyboard focus is put back; wide figures re-measured)
//   patches    {panel id: [operation, ...]}: numbers set in place (bridge/patch.js); a panel whose
//              markup a patch does not fit is asked for whole (a "redraw" event)
//   form       the form's model-dependent parts, or null when unchanged: select options, texts, the
//              slider's marker (the form itself is never redrawn)
//   values     {control id: value}: each control set, unless the reader is typing in it or a newer event
//              of its own waits; "attention-code" goes to the editor; "model" is the model now shown
//   load_model a model the link names that is still to download: downloaded (bridge/model.js), then the
//              link, kept in the address bar meanwhile, is sent again
//   hash       the state's URL fragment: the address bar follows once the reader pauses (bridge/url.js)
//   stale      the panels left with an old picture (off screen): marked data-outdated
//   focus      an element or panel id to scroll to (bridge/scroll.js)
//   notice     what of a link was ignored (#link-notice); a reply to a link without one clears it
//   message, field  an input error, under #<field>-message (or #input-message), #<field> aria-invalid;
//              every reply to a reader's event clears the last one; a bookkeeping reply (what is on
//              screen, a redraw, a restart's own events) touches it only to show one of its own
// Other calls to the worker: warm_up() (bridge/boot.js), tip() (bridge/tooltips.js), load_model() and
// download_progress() (bridge/model.js; dispatch.js's check that Python still answers), embed_snippet(),
// export_caption(), export_data() (bridge/share.js).
//
// Starting the worker (PyScript, the runtime's download, NumPy) is in launch.js, a part of this bridge:
// imported first, so the worker starts before the rest of the bridge is evaluated. One more script
// touches the browser, in the worker: site/runtime/pyodide_progress.mjs, Pyodide's loader with a byte count,
// because only the worker sees the runtime's download (the status line shows it). Saving a panel as
// SVG/PNG needs the rendered DOM, so that one job is done on this thread too, in export.js, imported only
// when a reader exports; the code editor (editor.js) only when it comes near the screen.
//
// Every module of ./bridge/ is imported here, so the browser finds the whole graph one level down
// rather than one import chain at a time. They import each other without a cycle: the queue does not
// import what runs an event (dispatch.js, which applies replies that send events); it is handed it here.
//
// Readiness hook for tests and embeds: <html data-state="loading|ready|error">; and for tests and
// curious readers in the console, globalThis.attentionExplorer (below).
//
// State: none at module level (start() keeps its own time limit for the boot).

import { firstWorker } from "./launch.js";
import { root } from "./bridge/page.js";
import { fail, running } from "./bridge/status.js";
import { setWorker, worker } from "./bridge/worker.js";
import { handleEventsWith, idle, pump, sentLog, waiting } from "./bridge/queue.js";
import { urlPending } from "./bridge/url.js";
import "./bridge/event-from.js";
import "./bridge/patch.js";
import "./bridge/focus.js";
import { loadPrerendered } from "./bridge/prerendered.js";
import "./bridge/scroll.js";
import "./bridge/code.js";
import "./bridge/model.js";
import "./bridge/apply.js";
import { isWarming, launch, warmUp } from "./bridge/boot.js";
import { runEvent } from "./bridge/dispatch.js";
import "./bridge/share.js";
import "./bridge/controls.js";
import "./bridge/viewport.js";
import "./bridge/print.js";
import "./bridge/tooltips.js";
import "./bridge/keys.js";
import "./bridge/embed.js";
import "./bridge/present.js";

const BOOT_TIMEOUT_MS = 180000; // a slow phone may take a minute; after this, say so

handleEventsWith(runEvent);

async function start() {
  const timer = setTimeout(() => {
    if (root.dataset.state === "loading")
      fail("Python did not start within 3 minutes. The pictures are the pre-computed default; reload to try again.");
  }, BOOT_TIMEOUT_MS);
  try {
    const w = await launch(location.hash, firstWorker);
    setWorker(w);
    // A handle for tests and for curious readers in the console: call the worker's exports.
    globalThis.attentionExplorer = { call: (name, arg) => worker().sync[name](arg), sent: sentLog, urlPending, idle,
                                     waiting: () => ({ ...waiting(), warming: isWarming() }) };
    running("Python is running: every change you make is computed live in your browser.");
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
