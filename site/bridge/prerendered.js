// The panels below the first screen come pre-rendered in prerendered.json (build.py), not in the page:
// each holds an empty <template data-prerendered> until it comes near the viewport (viewport.js), the
// page scrolls to it (scroll.js) or a print wants it (print.js); that template is gone once Python has
// drawn the panel. Markup from the file is trusted: rendered by our Python views at build time.
//
// State:
//   prerendered        the fetch of prerendered.json, a Promise of {panel id: markup}, made once (if it
//                      fails, Python draws those panels)
//   prerenderedMarkup  what it resolved to, or null: for a print that cannot wait

import { send } from "./queue.js";

const PENDING = ":scope > template[data-prerendered]";
let prerendered = null;
let prerenderedMarkup = null;

export function loadPrerendered() {
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
export async function showPrerendered(panels) {
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
export function showPrerenderedUpTo(el) {
  return showPrerendered([...document.querySelectorAll("[data-panel]")].filter((panel) =>
    (panel.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) || el.contains(panel)));
}

// At once, without waiting: the pending panels among `panels` whose markup has already arrived.
export function showLoadedPrerendered(panels) {
  if (!prerenderedMarkup) return;
  for (const panel of panels) {
    const slot = panel.querySelector(PENDING);
    const markup = prerenderedMarkup[panel.dataset.panel];
    if (slot && markup !== undefined) fillSlot(slot, markup);
  }
}
