// A runtime workaround (site/runtime/): Pyodide 0.27.7 has no download progress, so its loader is wrapped
// to count the bytes of what it fetches (it relies on Pyodide fetching with globalThis.fetch; if that
// changes, the count stays at 0 and tests/test_browser_skeleton.py's status-line test fails).
// Pyodide's loader with a byte count, for the page's progress line. PyScript's worker imports this
// module in place of pyodide.mjs (the bridge gives it as the Pyodide "version" URL; build.py puts it
// beside pyodide.mjs, whose folder PyScript takes for Pyodide's indexURL), so it runs in the worker,
// where the runtime is downloaded and the page cannot see the download.
//
// While loadPyodide runs, each response Pyodide fetches (the lock file, the WebAssembly, the standard
// library: build.RUNTIME_COUNTED_FILES) is counted through a clone read alongside: Pyodide keeps its
// own response, URL included, so Chromium still caches the compiled WebAssembly. The running total
// goes to the page on a BroadcastChannel named by this module's URL fragment (one per page: several
// embeds of one site share an origin), and so does a file that could not be fetched ({failed, status}),
// which the page reports in place of a start-up that would never finish.
// The clone costs no measurable time (bench/bench_workarounds.py switches it off: ready came 63 ms later
// without it in Chromium, 154 ms in Firefox ESR, 21 ms in WebKitGTK, medians of 6 rounds; in WebKit, the
// engine it was suspected in, an earlier run gave 3.22 s with it and 3.38 s without).
import { loadPyodide as loadRuntime, version } from "./pyodide.mjs";

export { version };

export async function loadPyodide(options) {
  const channel = new BroadcastChannel(new URL(import.meta.url).hash.slice(1) || "attention-explorer:runtime");
  const fetchAlone = globalThis.fetch;
  let loaded = 0, posted = 0;
  const post = () => { posted = performance.now(); channel.postMessage({ loaded }); };
  const count = async (copy) => {
    const reader = copy.body.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      loaded += chunk.value.byteLength;
      if (performance.now() - posted > 100) post(); // ten a second: each one wakes the page
    }
    post(); // a file complete: the page learns when every byte is in
  };
  const counting = [];
  globalThis.fetch = async (...args) => {
    let response;
    try {
      response = await fetchAlone(...args);
    } catch (err) { // offline or refused: the page says which file, at once (status 0: no answer at all)
      const url = args[0] instanceof Request ? args[0].url : String(args[0]);
      channel.postMessage({ failed: new URL(url, self.location.href).pathname.split("/").pop(), status: 0 });
      throw err;
    }
    // a file that is not there: the page says which at once (Pyodide's start-up would hang on it)
    if (!response.ok) channel.postMessage({ failed: new URL(response.url).pathname.split("/").pop(), status: response.status });
    // a failed read: Pyodide's own read of the same response fails too, and says so
    if (response.ok && response.body) counting.push(count(response.clone()).catch(() => {}));
    return response;
  };
  try {
    return await loadRuntime(options);
  } finally {
    globalThis.fetch = fetchAlone;
    // the copies may finish a moment after Pyodide's own reads: their last counts still go out
    Promise.allSettled(counting).then(() => channel.close());
  }
}
