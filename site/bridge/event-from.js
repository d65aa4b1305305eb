// What event a control on the page means, read from its data-* hooks (the views write them):
// data-event, data-toggle, data-token-index, data-value; a cell of a grid whose group names an event
// (data-cell-event with the cell's data-i / data-j, data-masked cells excluded).
//
// State: none.

export function eventFrom(el) {
  const event = { type: el.dataset.event };
  if (el.dataset.toggle !== undefined) event.toggle = el.dataset.toggle; // flips one member of a set
  if (el.dataset.tokenIndex !== undefined) event.index = el.dataset.tokenIndex;
  if (el.dataset.value !== undefined) event.value = el.dataset.value;
  else if (el.type === "checkbox") event.value = el.checked;
  else if ("value" in el && el.tagName !== "BUTTON") event.value = el.value;
  return event;
}

// A cell of a grid whose group names an event (data-cell-event, e.g. the heatmap's pick_cell "i,j").
export function cellEvent(target) {
  const group = target.closest && target.closest("[data-cell-event]");
  const cell = group && target.closest("[data-i][data-j]");
  if (!cell || cell.dataset.masked) return null;
  return { type: group.dataset.cellEvent, value: `${cell.dataset.i},${cell.dataset.j}` };
}
