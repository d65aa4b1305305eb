// The status line (#runtime-status: Python's start-up, its progress, its failure) and the link notice
// (#link-notice: what of a link was ignored, or why sharing must wait). Text goes in via textContent only.
//
// State: noticeTimer, the timer that hides the notice (a newer notice starts it again). What the page
// shows is kept on the page itself: <html data-state> and the status box's is-ready / is-error classes.

import { onProgress } from "../launch.js";
import { $, root } from "./page.js";

const statusBox = $("runtime-status");
export const STEPS = 4; // the runtime downloaded, Python started, NumPy loaded, the first picture computed

export function progress(text, step) {
  if (root.dataset.state === "error") return; // the failure's message stays (downloads may still be running)
  $("runtime-status-text").textContent = text;
  $("runtime-progress").value = step;
  $("runtime-progress").max = STEPS;
}

onProgress(progress); // the worker's start-up, from launch.js (it began before this module ran)

export function fail(message) {
  root.dataset.state = "error";
  statusBox.classList.add("is-error");
  $("runtime-status-text").textContent = message;
  $("runtime-progress").hidden = true;
}

// Python running, at first or again after a restart: the line says so, and the page is ready.
export function running(text) {
  progress(text, STEPS);
  statusBox.classList.add("is-ready");
  root.dataset.state = "ready";
}

// Python replaced (a restart): the page is loading again until the new worker runs.
export function restarting(text) {
  root.dataset.state = "loading";
  statusBox.classList.remove("is-ready", "is-error");
  progress(text, 0);
}

let noticeTimer = 0;
export function notify(text) {
  const el = $("link-notice");
  el.textContent = text;
  el.hidden = !text;
  clearTimeout(noticeTimer);
  if (text) noticeTimer = setTimeout(() => { el.hidden = true; }, 8000);
}
