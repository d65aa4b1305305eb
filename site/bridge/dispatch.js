// One event through Python (the event queue's handler, queue.js): dispatched, its reply applied; and
// Python replaced when the reader's own attention function hangs it or ends it (issue 12). Python cannot
// be interrupted from here (that needs cross-origin isolation, which GitHub Pages cannot give), so a
// function that runs too long is stopped by replacing the worker: the page starts Python again
// (seconds) with the last good state, which the URL holds, then runs the reader's last good function.
//
// State:
//   lastRunCode    the reader's last function that ran (Run, not a link), or null: the code is in use
//                  (every later event runs it under the limit) and is run again after a restart
//   lastLimitedMs  how long the last limited event took (the next limit grows with it)
//   lastLimitMs    the limit the last timeout hit, for its message

import { startWorker } from "../launch.js";
import { applyResponse } from "./apply.js";
import { launch, warmUp } from "./boot.js";
import { forgetCode, keepRanCode } from "./code.js";
import { forgetDownloads, getShownModel, isTrained, modelOfLink } from "./model.js";
import { $ } from "./page.js";
import { pump, send } from "./queue.js";
import { fail, restarting, running } from "./status.js";
import { currentHash } from "./url.js";
import { reportViewport } from "./viewport.js";
import { setWorker, worker } from "./worker.js";

const CODE_LIMIT_MS = 2000;
class CodeTimeout extends Error {}
let lastRunCode = null;
let lastLimitedMs = 0;
let lastLimitMs = CODE_LIMIT_MS;

export async function runEvent(event) {
  try {
    // the reader's code runs on a Run, and on every later change while it is in use: both are limited
    const limited = event.type === "run_code" || lastRunCode !== null;
    const w = worker();
    const res = await (limited ? dispatchWithLimit(event) : w.sync.dispatch(event));
    if (limited) await stillAnswering(w); // the reader's code may have closed the worker (js.close())
    if (event.type === "run_code" && !res.message && !event.restore) keepRanCode(event.value);
    if (event.type === "run_code" && !res.message) lastRunCode = event.value; // it ran: safe to run again
    if (event.type === "reset_code") { lastRunCode = null; lastLimitedMs = 0; forgetCode(); }
    applyResponse(res, event);
  } catch (err) {
    const gone = err instanceof PythonGone || PYTHON_ENDED.test(String((err && err.message) || err));
    if (err instanceof CodeTimeout || gone) {
      // a new function that hangs or ends Python: the last one that ran comes back; the function in use
      // doing it on a later change (a slider, a sentence): it is switched off, or the restart would do it again
      const culprit = event.type !== "run_code";
      if (culprit) lastRunCode = null;
      // not awaited: the restart's own events (the model's link replayed, the last good function) go through
      // the queue once the new worker is in; the reader's wait meanwhile (pump needs a worker)
      restartPython(gone ? endedMessage(err, culprit) : timeoutMessage(culprit));
      return;
    }
    console.warn("dispatch failed", err);
    $("input-message").textContent = "Something went wrong computing that view; the last good picture stays. ("
      + String(err.message || err).split("\n").filter(Boolean).pop() + ")";
  }
}

// The limit grows with the work the reader's function is given: on a trained model (one downloaded on
// demand) one change runs it over 72 heads, up to three times (ablation, a second sentence), which takes
// seconds on a slow machine and is no endless loop. A hang is still stopped: after 2 s (10 s on a trained
// model), or 5x the last limited change that finished, whichever is longer.
function dispatchWithLimit(event) {
  let timer;
  const trained = isTrained(event.type === "set_model" ? event.value : getShownModel());
  const ms = Math.max(trained ? 5 * CODE_LIMIT_MS : CODE_LIMIT_MS, 5 * lastLimitedMs), t0 = performance.now();
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => { lastLimitMs = ms; reject(new CodeTimeout("timeout")); }, ms);
  });
  const done = worker().sync.dispatch(event).then((res) => { lastLimitedMs = performance.now() - t0; return res; });
  return Promise.race([done, limit]).finally(() => clearTimeout(timer));
}

// Python gone: the reader's code ended it (os._exit, a fatal error) or closed its worker (js.close()).
// A call then fails with one of Pyodide's own messages, or the worker stops answering.
const PYTHON_ENDED = /Program terminated|already exited|fatal error/i;
class PythonGone extends Error {}
const ANSWER_MS = 3000; // a worker that answers nothing for this long after the reader's code ran is gone
function stillAnswering(w) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new PythonGone("Python stopped answering (did the function close its worker?)")),
      ANSWER_MS);
  });
  return Promise.race([w.sync.download_progress(), limit]).finally(() => clearTimeout(timer));
}

const restartTail = (switchedOff) => (switchedOff
  ? "started again with the page's own attention function."
  : "started again; the pictures show the last function that worked.");
function timeoutMessage(switchedOff) {
  return `Your function ran for more than ${Math.round(lastLimitMs / 100) / 10} s (an endless loop?), so Python was `
    + "stopped and " + restartTail(switchedOff);
}
function endedMessage(err, switchedOff) {
  const why = String((err && err.message) || err).split("\n").filter(Boolean)[0] || "it stopped";
  return `Your function ended the page's Python (${why.slice(0, 120)}), so Python was ` + restartTail(switchedOff);
}

// A new worker in place of one that hangs or is gone, with the last good state (the URL holds it): the
// trained model back from Cache Storage if it was in use, then the reader's last good function run again.
// The editor keeps the reader's code throughout; `said` stays under it.
async function restartPython(said) {
  const stopped = worker();
  setWorker(null); // events wait in the queue meanwhile
  forgetDownloads(); // the new worker has no trained model yet, and the old one's download ends with it
  try { stopped.terminate(); } catch (err) { console.warn("could not stop the worker", err); }
  lastLimitedMs = 0; // the next limit starts from 2 s again
  $("attention-code-message").textContent = said;
  restarting("Python stopped; starting it again…");
  try {
    const w = await launch(currentHash(), startWorker(), { restart: true });
    setWorker(w);
    pump(); // events that waited for the new worker
    await modelOfLink(); // the link's trained model, installed and replayed (see applyResponse)
    if (lastRunCode !== null) await send({ type: "run_code", value: lastRunCode, restore: true });
    running("Python is running again: every change you make is computed live in your browser.");
    $("attention-code-message").textContent = said;
    reportViewport();
    warmUp(w);
  } catch (err) {
    console.warn("restart failed", err);
    fail("Python could not be started again; reload the page. (" + String(err.message || err).split("\n")[0] + ")");
  }
}
