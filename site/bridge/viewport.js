// Which panels are on or near the screen, told to Python: it draws those at once and the others when
// they come into view (a slider then redraws two or three panels, not all of them). A panel coming near
// shows its pre-rendered picture meanwhile. Not on the embed page (one panel, always drawn).
//
// State:
//   near          the panels near the screen: mirrors the DOM's intersection state
//   viewportTimer the short wait that gathers a scroll's changes into one report
//   held          a print is drawing every panel: a newer "viewport" would replace its event in the queue

import { EMBED } from "./page.js";
import { showPrerendered } from "./prerendered.js";
import { send } from "./queue.js";

const near = new Set();
let viewportTimer = 0;
let held = false;

export function reportViewport() {
  if (!EMBED && !held) send({ type: "viewport", value: [...near] });
}

export function holdViewport(on) {
  held = on;
}

if (!EMBED) {
  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) {
      (e.isIntersecting ? near.add : near.delete).call(near, e.target.dataset.panel);
      if (e.isIntersecting) showPrerendered([e.target]);
    }
    clearTimeout(viewportTimer);
    viewportTimer = setTimeout(reportViewport, 60);
  }, { rootMargin: "50% 0px" });
  for (const el of document.querySelectorAll("[data-panel]")) observer.observe(el);
}
