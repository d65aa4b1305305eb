// A runtime workaround (site/runtime/: each file one, with what it works around, its measured gain on
// each engine and the test that fails if the runtime changes under it).
//
// What it works around: PyScript's core (0.6.66) puts a MutationObserver on the whole document (childList,
// subtree, attributes) while its module is imported, to find <script type="py"> tags and py-* event
// attributes; PyScript has no option to leave it out. This page has neither on the main thread (Python
// runs in the worker; events come through the bridge), and that observer walked every redrawn subtree
// with an XPath query and saw every attribute a slider's patch sets.
// How: importWithoutPageObserver(url) imports the module with MutationObserver.prototype.observe wrapped,
// and disconnects each observer put on the whole document meanwhile (PyScript makes it in a microtask
// of its module's evaluation, so it is caught then); the prototype is restored at once.
// Measured gain (bench/bench_workarounds.py, 6 alternating series of 30 slider moves at 8 tokens on each
// engine; docs/performance.md, "Runtime workarounds"): the rest of each reply's task after the swap (style,
// observers) 1.1 against 1.4 ms in Chromium, 1.0 against 1.5 ms in Firefox ESR, 1.0 against 2.0 ms in
// WebKitGTK (medians); the slider's p95 as a whole moves less than its noise (±2 ms). A full redraw
// (a new sentence: every panel on screen) is where the observer cost most: a tenth of its main-thread
// time in Chromium (bench_browser.py).
// Its test: tests/test_browser_skeleton.py checks that `caught` is 1 after the start-up, naming the
// pinned PyScript: 0 means PyScript no longer makes that observer (or makes it later), and this goes.
//
//   importWithoutPageObserver(url) -> Promise<module>
//   caught: number   the document-wide observers disconnected so far

export let caught = 0;

export async function importWithoutPageObserver(url) {
  const observe = MutationObserver.prototype.observe;
  const onDocument = [];
  MutationObserver.prototype.observe = function (target, options) {
    if (target === document && options && options.subtree && options.attributes) onDocument.push(this);
    return observe.call(this, target, options);
  };
  try {
    return await import(url);
  } finally {
    MutationObserver.prototype.observe = observe;
    for (const o of onDocument) o.disconnect();
    caught += onDocument.length;
  }
}
