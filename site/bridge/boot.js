// A worker brought to the page: the page's state from the link sent to it (boot), its first reply
// applied, then, once the page is ready, its warm-up (the views start-up left for later, and the
// rehearsals). Used at start-up (bridge.js) and by a restart (dispatch.js).
//
// State: warming, the warm-up in flight, or null (attentionExplorer.waiting() shows it).

import { ranCode, restoreDraft } from "./code.js";
import { applyResponse } from "./apply.js";
import { forgetModelOfLink } from "./model.js";
import { EMBED } from "./page.js";
import { applyPatch } from "./patch.js";
import { progress } from "./status.js";
import { worker } from "./worker.js";

let warming = null;
export const isWarming = () => Boolean(warming);

// A worker being started (launch.js: Pyodide, NumPy and our start-up modules), then the page's state
// from the link (hash); its first reply applied. restart: the link is the page's own (after a restart),
// so its code is no stranger's.
export async function launch(hash, starting, { restart = false } = {}) {
  const w = await starting;
  progress("Computing attention in Python…", 3);
  forgetModelOfLink();
  // own_code: the function the reader last ran here; a link carrying it is the reader's own page reloaded
  const reply = await w.sync.boot(hash, EMBED ? "embed" : "page", { restart, own_code: ranCode() });
  applyResponse(reply, restart ? { type: "boot", restore: true } : null);
  if (!restart) restoreDraft(reply);
  return w;
}

// Once ready: the views start-up left for later, and the rehearsals. A failure is a bug of ours (an
// error), unless that worker was stopped meanwhile (a restart).
export function warmUp(w) {
  const call = w.sync.warm_up().then(rehearsePatches)
    .catch((err) => (w === worker() ? console.error : console.warn)("warm-up failed", err))
    .finally(() => { if (warming === call) warming = null; });
  warming = call;
}

// The worker's warm-up hands back its rehearsal's last slider move as patches (page.rehearse): applied
// here to copies of the panels that never join the page, so that V8 has compiled applyPatch before the
// reader's first move (cold, it cost that move ~5 ms more, traced). Nothing on the page changes.
function rehearsePatches(patches) {
  for (const [id, ops] of Object.entries(patches || {})) {
    const el = document.querySelector(`[data-panel="${id}"]`);
    if (!el) continue;
    const copy = el.cloneNode(true);
    for (let k = 0; k < 3; k++) applyPatch(copy, ops);
  }
}
