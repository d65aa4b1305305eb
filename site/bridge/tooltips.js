// Tooltips and hover events. Any element with data-tip (text written by the Python views) shows it on
// hover or keyboard focus, text only (textContent), in one #tooltip element; an element with
// data-tip-src (a live heatmap's or LayerNorm chart's cell, whose long derivation is left out of the
// markup) asks the worker for its text. Hovering or focusing an element with data-hover-event sends that
// event (queue.js's sendHover); data-hover-row: a grid whose one row picks (a cell of that row sends its
// column, data-j). Escape hides the tooltip.
//
// State: tipFor, the element whose text is being asked of the worker, or null (a later hover cancels it).
// The #tooltip element itself is made here, once.

import { sendHover } from "./queue.js";
import { worker } from "./worker.js";

const tip = document.createElement("div");
tip.id = "tooltip";
tip.setAttribute("role", "tooltip");
tip.hidden = true;
// inside the page's main landmark (axe: all content in landmarks); absolutely placed in page coordinates,
// which holds while <main> is not positioned (style.css)
(document.querySelector("main") || document.body).append(tip);
let tipFor = null;

function showTip(el) {
  tip.textContent = el.dataset.tip;
  tip.hidden = false;
  const r = el.getBoundingClientRect();
  const w = tip.offsetWidth, h = tip.offsetHeight;
  const left = Math.min(Math.max(8, r.left + r.width / 2 - w / 2), window.innerWidth - w - 8);
  const top = r.top - h - 8 >= 0 ? r.top - h - 8 : r.bottom + 8;
  tip.style.left = `${left + window.scrollX}px`;
  tip.style.top = `${top + window.scrollY}px`;
  el.setAttribute("aria-describedby", "tooltip");
}
const hideTip = () => { tip.hidden = true; };

function hoverEvent(el, value = el.dataset.hoverValue ?? el.dataset.value) {
  sendHover({ type: el.dataset.hoverEvent, value });
}

async function showTipFromWorker(el) {
  tipFor = el;
  const w = worker();
  if (!w) return hideTip();
  const panel = el.closest("[data-panel]");
  const block = el.closest("[data-block]");
  const text = await w.sync.tip({ panel: panel && panel.dataset.panel, i: el.dataset.i, j: el.dataset.j,
                                  block: block ? block.dataset.block : "" });
  if (tipFor !== el || !el.isConnected || !text) return;
  el.dataset.tip = text; // until the next redraw replaces the element
  showTip(el);
}

for (const type of ["pointerover", "focusin"]) {
  document.addEventListener(type, (e) => {
    const el = e.target.closest && e.target.closest("[data-tip], [data-tip-src]");
    tipFor = null;
    if (el && el.dataset.tip) showTip(el);
    else if (el) showTipFromWorker(el);
    else hideTip();
    const hover = e.target.closest && e.target.closest("[data-hover-event]");
    if (hover && hover.dataset.hoverRow !== undefined) {
      // a grid whose one row picks: a cell of that row sends its column (the heatmap's query row -> key)
      const cell = e.target.closest("[data-i][data-j]");
      if (cell && cell.dataset.i === hover.dataset.hoverRow && !cell.dataset.masked) hoverEvent(hover, cell.dataset.j);
    } else if (hover) hoverEvent(hover);
  });
}

document.addEventListener("keydown", (e) => {
  if (e.key === "Escape") hideTip();
});
