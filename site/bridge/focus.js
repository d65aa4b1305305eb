// The keyboard focus through a redraw: where it is, as a selector that finds the same control in the
// redrawn markup, and put back there (or on its successor) afterwards, never left on <body>.
//
// State: none (the caller holds what focusedControl returned across its redraw).

// The data-* attributes that name a control across redraws (a chip, a cell, a step, a bar).
const IDENTITY = ["event", "toggle", "tokenIndex", "value", "i", "j", "measure", "dim", "unit"];

export function focusedControl() {
  const el = document.activeElement;
  const panel = el && el !== document.body && el.closest("[data-panel]");
  if (!panel) return null;
  const attrs = IDENTITY.filter((k) => el.dataset[k] !== undefined)
    .map((k) => `[data-${k.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase())}="${CSS.escape(el.dataset[k])}"]`);
  return { panel: panel.dataset.panel, selector: el.localName + attrs.join(""),
           arrowKeys: Boolean(el.closest("[data-arrow-keys]")), grid: Boolean(el.closest("[data-grid]")) };
}

export function restoreFocus(was) {
  if (!was || (document.activeElement && document.activeElement !== document.body)) return;
  const panel = document.querySelector(`[data-panel="${was.panel}"]`);
  if (!panel) return;
  const target = (was.arrowKeys && panel.querySelector('[aria-current="step"]'))  // the stepper: the new stage
    || panel.querySelector(was.selector)
    || (was.grid && panel.querySelector('[data-grid-cell][tabindex="0"]'));
  if (!target) return;
  if (!target.hasAttribute("tabindex")) { // a grid cell: it becomes the grid's tab stop
    const stop = target.closest("[data-grid]")?.querySelector('[tabindex="0"]');
    if (stop) stop.setAttribute("tabindex", "-1");
    target.setAttribute("tabindex", "0");
  }
  target.focus({ preventScroll: true });
}
