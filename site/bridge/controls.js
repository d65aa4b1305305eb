// The reader's clicks, typing and choices on the page's controls, turned into events for Python by
// delegated listeners on the document reading the controls' data-* hooks (event-from.js): a click on a
// [data-event] element or a grid cell, a [data-action] button (share.js), a text box (its event waits
// for a pause in typing: queue.js), a slider, a select or a checkbox (the model's select: model.js),
// a <details> whose long table waits as a template until opened.
//
// State: none.

import { cellEvent, eventFrom } from "./event-from.js";
import { chooseModel } from "./model.js";
import { send, typeInto } from "./queue.js";
import { runAction } from "./share.js";

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

// Shift/Ctrl/Cmd-click (or Shift+Enter, keys.js) on a token pins it as one more query instead of choosing it
export function pinning(e, el) {
  if (!(e.shiftKey || e.ctrlKey || e.metaKey) || !el.dataset.pinEvent) return false;
  e.preventDefault();
  send({ type: el.dataset.pinEvent, toggle: el.dataset.tokenIndex });
  return true;
}

document.addEventListener("input", (e) => {
  const el = e.target.closest("[data-event]");
  if (!el || el.type === "checkbox" || el.tagName === "SELECT") return;
  if (el.type === "text") typeInto(el); // waits for a pause in typing
  else send(eventFrom(el));
});

// A long table of numbers waits as an inert <template data-on-open> in a <details> (markup.table_on_request):
// it joins the page when a reader opens it; if a patch has changed the numbers since it was drawn
// (data-stale, see patch.js), Python draws the panel anew (the <details> reopens, data-keep).
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
