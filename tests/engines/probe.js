// Test-only (tests/engines/server.py puts it first in every page's <head>): records what the page
// reports as wrong, the engine-neutral stand-in for Playwright's console, pageerror and request
// events (WebKit's WebDriver has none of them). window.__aeProblems: one line per problem.
(() => {
  const seen = (window.__aeProblems = []);
  const text = (v) => {
    if (v instanceof Error) return `${v.name}: ${v.message}`;
    try { return typeof v === "string" ? v : JSON.stringify(v); } catch { return String(v); }
  };
  const error = console.error;
  console.error = function (...args) {
    seen.push("console error: " + args.map(text).join(" "));
    return error.apply(this, args);
  };
  addEventListener("error", (e) => {
    const el = e.target;
    if (el && el !== window && el.localName) seen.push(`failed to load <${el.localName}> ${el.src || el.href || ""}`);
    else seen.push(`page error: ${e.message} (${e.filename}:${e.lineno})`);
  }, true);
  addEventListener("unhandledrejection", (e) => seen.push("unhandled rejection: " + text(e.reason)));
  // window.__aeStatus: each text the start-up's status line shows, in order (the download's progress
  // comes from the worker on a BroadcastChannel: launch.js)
  const status = (window.__aeStatus = []);
  document.addEventListener("readystatechange", () => {
    const line = document.getElementById("runtime-status-text");
    if (document.readyState !== "interactive" || !line) return;
    const note = () => { if (status.at(-1) !== line.textContent) status.push(line.textContent); };
    note();
    new MutationObserver(note).observe(line, { childList: true, characterData: true, subtree: true });
  });
  // the server's Content-Security-Policy-Report-Only allows only this origin: any other is reported
  document.addEventListener("securitypolicyviolation", (e) =>
    seen.push(`request to another host: ${e.blockedURI} (${e.violatedDirective})`));
})();
