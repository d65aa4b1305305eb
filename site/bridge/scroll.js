// Scrolling: the page's own scroll to a stage or panel a reply names (bringIntoView), and the stepper
// following the reader's scrolling. When a scroll the reader made settles, the stage whose section
// crosses the reading line (a third down the screen) becomes current. Not after the page's own scroll
// to a chosen stage (its section may stop below the line at the end of the page): that one is current.
// Nor after a scroll nobody asked for (scroll anchoring as panels appear above, a host page's or a
// script's scrolling): only the reader's wheel, touch, pointer or keys move the stepper.
//
// State:
//   ownTarget, ownSince, ownTries  the page's own scroll: its target (or null), when it started, the
//                                  corrections made to it (Infinity: none more, the reader pressed)
//   readerScrolled                 wheel, touch, pointer or a scrolling key since the last scroll settled
//   readerGoesOn                   without scrollend: until when a new scroll still counts as the reader's

import { $, EMBED } from "./page.js";
import { showPrerenderedUpTo } from "./prerendered.js";
import { send } from "./queue.js";
import { worker } from "./worker.js";

let ownTarget = null, ownSince = 0, ownTries = 0;
let readerScrolled = false;
let readerGoesOn = 0;

// Open every folded part (<details>) el is in, and el itself if it is one: what a link or a tour step
// names is shown, never left folded away.
export function unfold(el) {
  if (el.localName === "details") el.open = true;
  for (let d = el.closest("details:not([open])"); d; d = d.parentElement?.closest("details:not([open])")) d.open = true;
}

export async function bringIntoView(id) {
  const el = $(id) || document.querySelector(`[data-panel="${CSS.escape(id)}"]`);
  if (!el || EMBED) return;
  unfold(el);
  await showPrerenderedUpTo(el);
  for (const old of document.querySelectorAll(".is-focused-stage")) old.classList.remove("is-focused-stage");
  el.classList.add("is-focused-stage");
  const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  // the scroll that follows is the page's own, not the reader's (see scrollSettled); a panel named by a
  // link is read from its card's heading, so the card is what comes to the top
  ownTarget = el.matches("[data-panel]") ? (el.closest(".card") || el) : el;
  ownSince = performance.now();
  ownTries = 0;
  readerScrolled = false;
  readerGoesOn = 0;
  scrollBelowStepper(ownTarget, smooth ? "smooth" : "auto");
}

// Scroll el's top to just below the sticky stepper bar, measured: its height depends on the width, the
// fonts and the current stage's name, and a fixed scroll-margin would hide a heading under it somewhere.
function scrollBelowStepper(el, behavior) {
  const bar = document.querySelector(".stepper-bar");
  const cover = bar && getComputedStyle(bar).position === "sticky" ? bar.getBoundingClientRect().height : 0;
  window.scrollTo({ top: Math.max(0, window.scrollY + el.getBoundingClientRect().top - cover - 8), behavior });
}

for (const type of ["wheel", "touchmove"]) {
  window.addEventListener(type, () => { readerScrolled = true; }, { passive: true });
}
// a press on the page (a scrollbar, text) may start a scroll; a press on a control does not: counting
// it took the end of the page's own scroll, still running from a stage chosen before, for the reader's
// (clicking Reset meanwhile left the stepper on the stage that scroll happened to end at)
const CONTROLS = "button, input, select, textarea, a, summary, label, [data-event], [tabindex]";
// Nor does the page correct its own scroll once the reader has pressed anything: a correction jump
// between a press and its release moves the control away from under the pointer, and the click is lost
// (traced: a stage chosen while the scroll to the one chosen before was still running, at 360 px where
// the stepper is not yet sticky; the press landed on one button, the release on a formula below it).
window.addEventListener("pointerdown", (e) => {
  if (!(e.target instanceof Element && e.target.closest(CONTROLS))) readerScrolled = true;
  ownTries = Infinity;
}, { passive: true });
window.addEventListener("keydown", (e) => {
  if (["PageUp", "PageDown", "Home", "End", "ArrowUp", "ArrowDown", " ", "Tab"].includes(e.key)
      && !(e.target.closest && e.target.closest("input, select, textarea"))) readerScrolled = true;
});
const atBottom = () => window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 4;
function scrollSettled() {
  if (ownTarget && !readerScrolled && performance.now() - ownSince < 5000) {
    const top = ownTarget.getBoundingClientRect().top;
    const arrived = (top > -8 && top < window.innerHeight / 3) || atBottom();
    if (!arrived && ownTries < 2) { // panels redrawn above it moved the target: finish the page's own scroll
      ownTries += 1;
      scrollBelowStepper(ownTarget, "auto");
      return;
    }
    // the chosen stage stays current; a panel a link or a tour step named makes its stage current (the
    // stepper said "1 Input" beside the researcher's section, reached by a link)
    const stage = stageSections().includes(ownTarget);
    ownTarget = null;
    if (!stage) followStage();
    return;
  }
  // The reader scrolling while the page's own scroll runs cuts that scroll short, and its scrollend comes
  // at once, before the reader's scroll has moved the page: that one ends later, in a scrollend of its own,
  // so the reader's flag stays for it (traced: a wheel during the scroll to a chosen stage; the stepper
  // followed the cut-short scroll and then stayed there, the reader's scroll not followed)
  const cutShort = ownTarget !== null && readerScrolled && performance.now() - ownSince < 5000;
  ownTarget = null;
  if (readerScrolled) followStage();
  if (!cutShort) readerScrolled = false;
}
if ("onscrollend" in window) window.addEventListener("scrollend", scrollSettled);
else { // no scrollend event (WebKitGTK 2.50, Safari before 18): a scroll quiet for 150 ms has settled. A
  // reader's scroll can pause longer and go on (WebKitGTK's End key: quiet for 0.5 s while the panels that
  // came into view were laid out, then on to the end of the longer page, the stepper left behind), so a
  // scroll within a second of the reader's settling is still the reader's
  let quiet = 0;
  window.addEventListener("scroll", () => {
    if (performance.now() < readerGoesOn) readerScrolled = true;
    clearTimeout(quiet);
    quiet = setTimeout(() => {
      if (readerScrolled && ownTarget === null) readerGoesOn = performance.now() + 1000;
      scrollSettled();
    }, 150);
  }, { passive: true });
}

// the stages' sections, in order: each stepper button controls one (aria-controls)
const stageSections = () => [...document.querySelectorAll(".stepper .step[aria-controls]")]
  .map((b) => $(b.getAttribute("aria-controls")));
function followStage() {
  if (EMBED || !worker()) return;
  // at the very bottom the last sections may never reach the line: then the last one on screen counts
  const line = atBottom() ? window.innerHeight - 40 : window.innerHeight / 3;
  let current = -1;
  stageSections().forEach((el, k) => { if (el && el.getBoundingClientRect().top <= line) current = k; });
  const shown = document.querySelector(".stepper [aria-current=step]");
  if (current < 0 || !shown || shown.dataset.value === String(current)) return;
  send({ type: "set_stage", value: current, follow: true });
}
