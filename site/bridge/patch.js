// A slider that changed only numbers: Python sends them, not markup (see attention_matrix.render_patch),
// and they are set in place, so the panel's elements (and the reader's focus, hover, open tables) stay.
//
// A patch is a list of operations. Each: elements by selector (op.sel) inside the panel, one value per
// element in document order (op.values, joined by "\n", or by op.sep when a value holds newlines), set
// as an attribute (op.attr), as textContent (op.text), as a class on "1" and off "0" (op.toggle, whose
// values are one "0"/"1" each, not joined), or an attribute removed (op.remove). Only an "html"
// operation (one element, the affinity formula's MathML from our views) sets markup. op.unopened names
// a <details data-keep> whose table is still an unopened template: its numbers are not patched, the
// template is marked stale (opening it then asks for the panel: controls.js).
//
// State: none.

// False if the markup does not fit the patch (then the caller asks Python for the whole panel).
export function applyPatch(panel, ops) {
  const found = ops.map((op) => panel.querySelectorAll(op.sel));
  const values = ops.map((op) => (op.values === undefined ? null
    : op.toggle ? op.values : op.html ? [op.values] : op.values.split(op.sep || "\n")));
  // a table never opened is still a template: its numbers are not patched, it is marked stale instead
  const unopened = ops.map((op, k) => Boolean(op.unopened) && found[k].length === 0
    && panel.querySelector(`details[data-keep="${CSS.escape(op.unopened)}"] > template[data-on-open]`));
  if (!ops.every((op, k) => values[k] === null || unopened[k] || values[k].length === found[k].length)) return false;
  ops.forEach((op, k) => {
    const els = found[k];
    if (unopened[k]) { unopened[k].dataset.stale = "true"; return; }
    if (op.remove) { for (const el of els) el.removeAttribute(op.remove); return; }
    for (let i = 0; i < els.length; i++) {
      const el = els[i], v = values[k][i];
      if (op.html) el.innerHTML = v; // trusted: rendered by our Python views, all text escaped there
      else if (op.toggle) el.classList.toggle(op.toggle, v === "1");
      else if (op.text) { if (el.textContent !== v) el.textContent = v; }
      else if (el.getAttribute(op.attr) !== v) el.setAttribute(op.attr, v);
    }
  });
  return true;
}
