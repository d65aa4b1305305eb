// The address bar follows the state (replaceState: moving a slider adds no history entries), once the
// reader pauses: each replaceState is a same-document navigation, and Chromium then fetches and decodes
// the page's icon again (~8 ms of main-thread work a slider move, traced). Whatever reads the URL (a link
// to share, a restart) takes the pending one first; a fragment the reader sets (a pasted link, Back) is
// sent to Python as a link to load and cancels the pending one.
//
// State:
//   pendingHash  "#..." or "" not yet in the address bar, or null; hashTimer, the pause it waits for
//   shownHash    the fragment as the page last left the address bar, or as the reader set it

import { send } from "./queue.js";

const URL_QUIET_MS = 250;
let hashTimer = 0;
let pendingHash = null;
let shownHash = location.hash;

export function followState(hash) {
  pendingHash = hash ? "#" + hash : "";
  clearTimeout(hashTimer);
  hashTimer = setTimeout(flushHash, URL_QUIET_MS);
}

function flushHash() {
  clearTimeout(hashTimer);
  const want = pendingHash;
  pendingHash = null;
  // A fragment the reader set since (a pasted link, Back) wins: its hashchange event may come after this
  // (on a busy machine the timer ran first and put the old view back, so the link was never shown).
  if (location.hash !== shownHash) return;
  if (want !== null && location.hash !== want) {
    history.replaceState(null, "", want || location.pathname + location.search);
  }
  shownHash = location.hash;
}

export function currentHash() { flushHash(); return location.hash; }
export function currentHref() { flushHash(); return location.href; }
export const urlPending = () => pendingHash !== null; // for the test hook

window.addEventListener("pagehide", flushHash);
document.addEventListener("visibilitychange", flushHash);
window.addEventListener("hashchange", () => {
  clearTimeout(hashTimer); // the reader's own hash wins over a pending update
  pendingHash = null;
  shownHash = location.hash;
  send({ type: "load_hash", value: location.hash });
});
