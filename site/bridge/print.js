// Print (the footer's button, Ctrl+P / Cmd+P): every panel drawn for the current state first, as a reader
// who scrolled through the page would see it, then the browser's print dialog; then Python goes back to
// drawing only what is on screen. A print from the browser's menu cannot wait: it prints what is drawn,
// and the panels not drawn say how to print them (style.css, @media print). Not on the embed page.
//
// Every folded part (details.more) is printed open, and folded again after. A handout (the footer's other
// button) prints only the first screen and the current stage's lead card, folded parts left folded
// (html.handout, style.css).
//
// State: printing, true while printEverything draws every panel and the dialog is open;
//        unfolded, the folded parts a print opened (closed again after it).

import { $, EMBED, root } from "./page.js";
import { showLoadedPrerendered, showPrerendered } from "./prerendered.js";
import { send } from "./queue.js";
import { holdViewport, reportViewport } from "./viewport.js";

const PRINT_WAIT_MS = 15000; // drawing every panel takes a second or two; past this, print what is there
let printing = false;
let unfolded = [];

function unfoldForPrint() {
  unfolded = [...unfolded, ...document.querySelectorAll("details.more:not([open]), details.more-inline:not([open])")];
  for (const d of unfolded) d.open = true;
}
function foldAfterPrint() {
  for (const d of unfolded) d.open = false;
  unfolded = [];
}

// The panels drawn for the state (their pre-rendered pictures first), within PRINT_WAIT_MS.
async function drawn(panels) {
  await showPrerendered(panels);
  if (root.dataset.state === "error") return;
  let waited = 0;
  const limit = new Promise((resolve) => { waited = setTimeout(resolve, PRINT_WAIT_MS); });
  await Promise.race([send({ type: "viewport", value: panels.map((el) => el.dataset.panel) }), limit]);
  clearTimeout(waited);
}

async function printEverything() {
  const button = $("print-all");
  if (printing) return;
  printing = true;
  holdViewport(true);
  if (button) { button.disabled = true; button.textContent = "Drawing every picture…"; }
  unfoldForPrint();
  try {
    await drawn([...document.querySelectorAll("[data-panel]")]);
  } finally {
    if (button) { button.disabled = false; button.textContent = "Print every picture"; }
  }
  try {
    window.print(); // returns when the dialog closes
  } finally {
    printing = false;
    foldAfterPrint();
    holdViewport(false);
    reportViewport();
  }
}

// The handout: the first screen's panels and the current stage's lead panels drawn for the state, then
// printed with the rest of the page left out.
async function printHandout() {
  if (printing) return;
  printing = true;
  holdViewport(true);
  const id = document.querySelector(".stepper [aria-current=step]")?.getAttribute("aria-controls");
  const stage = id ? $(id) : null;
  const lead = stage ? [...stage.querySelectorAll(":scope > .card [data-panel]")] : [];
  try {
    await drawn([...document.querySelectorAll(".site-header [data-panel], .workspace [data-panel]"), ...lead]);
    root.classList.add("handout");
    stage?.classList.add("is-handout-stage");
    window.print();
  } finally {
    root.classList.remove("handout");
    stage?.classList.remove("is-handout-stage");
    printing = false;
    holdViewport(false);
    reportViewport();
  }
}

// A print from the browser's menu: what can be shown at once is, the pre-rendered pictures of panels
// never near the screen that are still the current state's (not data-outdated).
window.addEventListener("beforeprint", () => {
  if (printing) return;
  unfoldForPrint();
  showLoadedPrerendered(document.querySelectorAll("[data-panel]:not([data-outdated])"));
});
window.addEventListener("afterprint", () => { if (!printing) foldAfterPrint(); });

if (!EMBED) {
  $("print-all")?.addEventListener("click", printEverything);
  $("print-handout")?.addEventListener("click", printHandout);
  document.addEventListener("keydown", (e) => {
    if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === "p") {
      e.preventDefault();
      printEverything();
    }
  });
}
