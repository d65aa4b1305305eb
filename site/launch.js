// Starting the Python worker: the part of the main-thread bridge (bridge.js imports it first) that starts
// PyScript's worker, follows the runtime's download for the status line, and loads NumPy. The worker
// starts when this module is evaluated: index.html and embed.html load it as an async module in <head>,
// with the config it reads beside it, so that it runs as soon as the engine runs a script, not after the
// rest of the bridge (bridge.js imports it too: the same module, evaluated once). In practice that gains
// little: WebKitGTK 2.50 runs no script until its first style and layout of the page are done (0.43-0.49 s
// after navigation start; 0.15 s with no CSS at all), then this module 2-25 ms before the bridge; ready
// was 3.07 s against 3.30 s as a part of the bridge (6 alternating cold loads, within the noise), Chromium
// 1.57 against 1.61 s, Firefox 1.20 against 1.18 s. (At the top of <body>, measured earlier in Chromium
// only, it was later: 2.53 s against 2.37 s.) It touches no element of the page but its config: progress
// goes to whoever listens (bridge/status.js), the last report kept until it does.
//
//   firstWorker: Promise<worker>   the page's worker, started when this module ran, NumPy loaded
//   startWorker() -> Promise<worker>   another one (after a restart), the same way
//   onProgress(fn)   fn(text, step) for each report, the latest at once (step 0..2 of bridge/status.js's STEPS)

import { importWithoutPageObserver } from "./runtime/page_observer.js";

const STEP_NUMPY = 2; // the steps this module reports: 0..1 the runtime's bytes, 2 NumPy (bridge/status.js: STEPS)

let listener = null;
let latest = null;
function report(text, step) {
  latest = [text, step];
  if (listener) listener(text, step);
}
export function onProgress(fn) {
  listener = fn;
  if (latest) fn(...latest);
}

// The files the worker imports as scripts, checked from the main thread while it boots: a missing one
// makes Pyodide's start-up hang inside the worker rather than fail, and this way the reader gets a
// message naming the file at once. The files it fetch()es (build.RUNTIME_COUNTED_FILES) are checked
// where they arrive, by the byte count (followDownload): HEAD requests for them from here were
// measured to hold up the worker's own download of the WebAssembly in some cold loads (Chromium's cache
// entry for the URL busy with the HEAD: 1.7-1.9 s for a download that takes 0.4 s).
const SCRIPT_FILES = ["vendor/pyodide/pyodide.mjs", "vendor/pyodide/pyodide.asm.js"];
// a file that got no answer at all: Python's runtime is downloaded on every first visit, so it needs the network
const NO_ANSWER = "no answer from the server: Python needs the network to start; check the connection";

async function preflight() {
  if (typeof WebAssembly !== "object") throw new Error("this browser has no WebAssembly");
  await Promise.all(SCRIPT_FILES.map(async (path) => {
    // no cache: "no-store": it made Chromium drop its cached compiled wasm on repeat visits
    let res;
    try {
      res = await fetch(path, { method: "HEAD" });
    } catch {
      throw new Error(`could not download ${path} (${NO_ANSWER})`);
    }
    if (!res.ok) throw new Error(`could not download ${path} (HTTP ${res.status})`);
  }));
}

const megabytes = (n) => (n / 1e6).toFixed(1);

// The runtime's download, as the worker counts it (site/runtime/pyodide_progress.mjs, on the channel `name`),
// against the files' sizes ({path: bytes}, build.runtime_counted_bytes): the progress line moves from
// the first second, then says "Starting Python" once every byte is in. Returns {stop, failed}: a
// function that stops following, and a promise that rejects if one of the files could not be fetched.
function followDownload(name, files) {
  const total = Object.values(files).reduce((a, b) => a + b, 0);
  const channel = new BroadcastChannel(name);
  let shown = "";
  let fail = null;
  const failed = new Promise((_, reject) => { fail = reject; });
  failed.catch(() => {}); // raced against the start-up; nobody else awaits it
  const show = (loaded) => {
    const text = loaded >= total ? "Starting Python…"
      : `Downloading Python: ${megabytes(loaded)} of ${megabytes(total)}\u00a0MB…`; // one line at 360 px
    if (text === shown) return; // each text once (the worker posts up to ten counts a second)
    shown = text;
    report(text, Math.min(loaded / total, 1));
  };
  if (total > 0) show(0);
  channel.onmessage = (e) => {
    if (!e.data) return;
    if (typeof e.data.failed === "string") {
      const path = Object.keys(files).find((p) => p.endsWith("/" + e.data.failed)) || e.data.failed;
      fail(new Error(`could not download ${path} (${e.data.status ? `HTTP ${e.data.status}` : NO_ANSWER})`));
    } else if (total > 0 && typeof e.data.loaded === "number") show(e.data.loaded);
  };
  return { stop: () => channel.close(), failed };
}

// build.worker_config, written into the page by build.py: the runtime files' sizes (for the byte
// count), our start-up modules' bundle and NumPy's wheel (both fetched by the worker's load_numpy),
// then PyScript's own
const CONFIG = JSON.parse(document.getElementById("worker-config").textContent);

// A new worker: Pyodide, then NumPy and our start-up modules.
export async function startWorker() {
  report("Downloading Python…", 0);
  // (a URL, not a path: page_observer.js imports it, and a path would be taken from its folder)
  const { PyWorker } = await importWithoutPageObserver(new URL("./vendor/pyscript/core.js", import.meta.url).href);
  // a new task for the worker's start-up: with the module's evaluation it made one long main-thread
  // task (Lighthouse mobile: 190-270 ms of blocking); two shorter ones leave the page room to respond
  await new Promise((resolve) => setTimeout(resolve, 0));
  // an object, not the JSON text: a second worker (after a restart) would be handed the text unparsed
  // (pyscript.magic_js fails on it); Lighthouse measured no difference for the first
  const { startup_bundle: bundle, numpy_wheel: numpy, runtime_files: files, ...config } = CONFIG;
  // Pyodide's loader with a byte count (site/runtime/pyodide_progress.mjs), its channel named in the fragment
  const channel = `attention-explorer:runtime:${Math.random().toString(36).slice(2)}`;
  const version = new URL(`./vendor/pyodide/attention-explorer-progress.mjs#${channel}`, document.baseURI).href;
  const download = followDownload(channel, files || {});
  let w;
  try {
    [w] = await Promise.race([download.failed, Promise.all([
      PyWorker("./py/attention_explorer/worker_main.py", { type: "pyodide", version, config }),
      preflight(),
    ])]);
  } finally {
    download.stop();
  }
  report("Loading NumPy…", STEP_NUMPY);
  await w.sync.load_numpy({ bundle, numpy, base: new URL(".", document.baseURI).href });
  return w;
}

export const firstWorker = startWorker();
// its failure is the bridge's to report, once it runs: not an unhandled rejection meanwhile
firstWorker.catch(() => {});
