// The trained models, downloaded on demand: a model whose files are still to come is downloaded by the
// worker (with progress under the form, #model-download; on the embed page, in the status line) while the
// page stays on the current model and works; then the page switches to it, or replays the link that
// named it. One download at a time; the reader's last choice wins.
//
// State:
//   MODEL_FILES  build.py's manifest, read once from the page: {id: {src, bytes, modules}}
//   installed    the models the running worker has (emptied when a restart replaces it)
//   loading      the download in flight: {id, done}, or null
//   shownModel   the model of the last reply (the #model value the state has)
//   choice       the reader's (or a link's) last choice still to apply: {id, replayHash, restore}, or null
//   coming       the download a reply asked for (a link to a model), for a restart to wait on, or null
//   modelRestart ends the wait for a download the stopped worker was making
//   retryModel   what the Try again button (#model-retry) does after a failure, or null

import { $ } from "./page.js";
import { send } from "./queue.js";
import { whenWorker } from "./worker.js";

const MODEL_FILES = JSON.parse(($("model-files") && $("model-files").textContent) || "{}");
const installed = new Set();
let loading = null;
let shownModel = "";
let choice = null;
let coming = null;
let modelRestart = () => {};
let retryModel = null;

export const isTrained = (id) => id in MODEL_FILES;
export const getShownModel = () => shownModel;
export function setShownModel(id) { shownModel = id; }

function downloadUi(text, { value = null, max = 1, failed = false } = {}) {
  const box = $("model-download");
  if (!box) { // the embed page has no form: the status line speaks
    $("runtime-status-text").textContent = text;
    return;
  }
  box.hidden = !text;
  box.classList.toggle("is-error", failed);
  $("model-download-text").textContent = text;
  const bar = $("model-progress");
  bar.hidden = failed || value === null;
  if (value !== null) { bar.max = max; bar.value = value; }
  $("model-retry").hidden = !failed;
}

const megabytes = (n) => (n / 1e6).toFixed(1);

// Choose a model; one whose files are still to come is downloaded first. replayHash: a link to replay
// once the model is there (it named the model). switchTo false: only download (the comparison card).
// A model chosen while another downloads is shown at once, and the download, when it ends, switches
// nothing. restore: the replay is the page's own after a restart.
export async function chooseModel(id, replayHash = null, switchTo = true, restore = false) {
  const spec = MODEL_FILES[id];
  if (switchTo) choice = { id, replayHash, restore };
  // once the files are in: switch to the model (or replay the link) if it is still the last choice
  const then = () => {
    // only downloading, or another model chosen since: the comparison card can use it now
    if (!switchTo || choice === null || choice.id !== id) return send({ type: "redraw", value: "compare" });
    const { replayHash: hash, restore: own } = choice;
    choice = null;
    return send(hash !== null ? { type: "load_hash", value: hash, ...(own ? { restart: true, restore: true } : {}) }
      : { type: "set_model", value: id });
  };
  if (!spec || installed.has(id)) { await then(); return; }
  if (loading && loading.id === id) { // already on its way: the choice above is what happens when it ends
    await loading.done.catch(() => {});
    return;
  }
  if (loading) await loading.done; // another model first (one download at a time)
  const w = await whenWorker();
  const base = new URL(".", document.baseURI).href;
  const total = spec.bytes;
  downloadUi(`Downloading the trained model: 0 of ${megabytes(total)} MB…`, { value: 0, max: total });
  const poll = setInterval(async () => {
    const p = await w.sync.download_progress();
    if (p.phase === "download") {
      downloadUi(`Downloading the trained model: ${megabytes(p.loaded)} of ${megabytes(total)} MB…`,
        { value: p.loaded, max: total });
    } else if (p.phase === "verify") {
      downloadUi("Checking the trained model's file…", { value: total, max: total });
    } else if (p.phase === "install") {
      downloadUi("Unpacking the trained model's weights…", { value: total, max: total });
    }
  }, 250);
  // a restart ends the worker and its download: the wait ends with it (the restart chooses again)
  const stopped = new Promise((resolve) => { modelRestart = () => resolve({ ok: false, restarted: true }); });
  const mine = { id, done: Promise.race([w.sync.load_model({ ...spec, model: id, base }), stopped]) };
  loading = mine;
  let result;
  try {
    result = await mine.done;
  } catch (err) {
    result = { ok: false, message: `Could not load the trained model (${String(err.message || err).split("\n")[0]}).` };
  } finally {
    clearInterval(poll);
    if (loading === mine) loading = null;
  }
  if (result.restarted) { downloadUi(""); return; }
  if (result.ok) {
    installed.add(id);
    downloadUi("");
    await then();
  } else {
    downloadUi(result.message, { failed: true });
    if (choice && choice.id === id) choice = null;
    if ($("model")) $("model").value = shownModel; // still the model the page shows
    retryModel = () => chooseModel(id, replayHash, switchTo, restore);
  }
}
if ($("model-retry")) $("model-retry").addEventListener("click", () => { if (retryModel) retryModel(); });

// A link to a model still to download: the page shows the default meanwhile, and the link stays in the
// address bar (a reload still opens it) until the model is in and the link is replayed.
export function chooseModelOfLink(id, restore) {
  coming = chooseModel(id, location.hash, true, restore);
}
export const modelOfLink = () => coming; // the restart waits for it
export function forgetModelOfLink() { coming = null; }

// A restart: the new worker has no trained model yet (it comes back from Cache Storage), and a download
// the old worker was making ends with it (chooseModel hears it: modelRestart).
export function forgetDownloads() {
  installed.clear();
  loading = null;
  modelRestart();
}
