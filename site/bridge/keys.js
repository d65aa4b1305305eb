// The keyboard on the pictures: Enter or Space on a focusable picture element with an event (a heatmap
// cell, a bar) acts as a click (buttons, links and form controls do that by themselves); Shift+Enter
// on a token pins it; Left/Right in a [data-arrow-keys] widget (the stepper) press its prev/next
// buttons; the arrow keys move the focus within a grid of cells ([data-grid] of [data-grid-cell] with
// data-i / data-j, e.g. a heatmap), whose one tab stop (tabindex="0") moves with it. Escape leaves the
// guided tour (outside a dialog); that it also hides a tooltip is tooltips.js's.
//
// State: none (a grid's tab stop is on the page: the cell with tabindex="0").

import { pinning } from "./controls.js";
import { cellEvent, eventFrom } from "./event-from.js";
import { send } from "./queue.js";

const ARROWS = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };

document.addEventListener("keydown", (e) => {
  if (!e.target.closest) return;
  if (e.key === "Escape" && document.querySelector(".tour-card") && !e.target.closest("dialog")) {
    send({ type: "tour_step", value: -1 });
    return;
  }
  if (e.key === "Enter" && e.shiftKey) {
    const el = e.target.closest("[data-pin-event]");
    if (el && pinning(e, el)) return;
  }
  if (e.key === "Enter" || e.key === " ") {
    const picked = cellEvent(e.target)
      || (e.target.matches("[data-event]:not(button, a, input, select, textarea)") && eventFrom(e.target));
    if (picked) { e.preventDefault(); send(picked); return; }
  }
  const widget = e.target.closest("[data-arrow-keys]");
  if (widget && (e.key === "ArrowLeft" || e.key === "ArrowRight")) {
    const btn = widget.querySelector(`[data-arrow="${e.key === "ArrowLeft" ? "prev" : "next"}"]`);
    if (btn && !btn.disabled) { e.preventDefault(); send(eventFrom(btn)); }
    return;
  }
  const cell = e.target.closest("[data-grid-cell]");
  const step = ARROWS[e.key];
  if (!cell || !step) return;
  const grid = cell.closest("[data-grid]");
  const next = grid && grid.querySelector(
    `[data-grid-cell][data-i="${Number(cell.dataset.i) + step[0]}"][data-j="${Number(cell.dataset.j) + step[1]}"]`);
  if (next) {
    e.preventDefault();
    cell.setAttribute("tabindex", "-1");
    next.setAttribute("tabindex", "0");
    next.focus();
  }
});
