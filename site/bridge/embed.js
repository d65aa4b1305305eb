// The embed page in a host page's iframe: the host sizes the frame from this message (see README,
// "Host it and embed it"), sent again whenever the page's height changes.
//
// State: none.

import { EMBED } from "./page.js";

if (EMBED && window.parent !== window) {
  const report = () => window.parent.postMessage(
    { type: "attention-explorer:height", height: Math.ceil(document.body.getBoundingClientRect().height) }, "*");
  new ResizeObserver(report).observe(document.body);
}
