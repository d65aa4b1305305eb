// The reader's own attention function in the page (issue 12): the editor's buttons (Run, Reset, the
// ready-made edits), its upgrade to CodeMirror (editor.js) once it is on screen, and the reader's code
// kept. What the reader types stays in the editor through restarts, the view's Reset and reloads (kept
// per page in local storage until the editor's own Reset), and the function they last ran is remembered
// so that reloading their own page is not taken for a link carrying someone's code. Running it under a
// time limit is dispatch.js's job.
//
// State: none in memory. The <textarea id="attention-code"> holds the code (editor.js keeps it equal to
// the editor's document); local storage holds CODE_KEY + ":draft" (what the reader typed) and
// CODE_KEY + ":ran" (the function they last ran).

import { $ } from "./page.js";
import { send } from "./queue.js";
import { workerReady } from "./worker.js";

const CODE_KEY = `attention-explorer:code:${location.pathname}`;
function stored(key) {
  try { return localStorage.getItem(key); } catch { return null; } // storage refused: nothing kept
}
function store(key, value) {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch { /* refused: nothing kept */ }
}
const keepDraft = () => store(CODE_KEY + ":draft", codeText());
export const keepRanCode = (code) => store(CODE_KEY + ":ran", code);
export const ranCode = () => stored(CODE_KEY + ":ran") || "";
export function forgetCode() { store(CODE_KEY + ":draft", null); store(CODE_KEY + ":ran", null); }
// after the first reply: the reader's draft back in the editor, unless the link brought code of its own
export function restoreDraft(reply) {
  const draft = stored(CODE_KEY + ":draft");
  if (draft !== null && $("attention-code") && !(reply.values && "attention-code" in reply.values)) setCodeText(draft);
}

function codeText() {
  return $("attention-code").value; // editor.js keeps it equal to the editor's document
}
function runCode() { send({ type: "run_code", value: codeText() }); }

export function setCodeText(text) {
  const el = $("attention-code");
  if (!el || el.value === text) return; // the embed page has no editor
  el.value = text;
  el.dispatchEvent(new Event("input", { bubbles: false })); // editor.js follows
}

if ($("run-code")) {
  $("run-code").addEventListener("click", runCode);
  $("reset-code").addEventListener("click", () => send({ type: "reset_code" }));
  // typed in the plain text box (a real input event) or in CodeMirror (editor.js's "reader-edit")
  $("attention-code").addEventListener("input", (e) => { if (e.isTrusted) keepDraft(); });
  $("attention-code").addEventListener("reader-edit", keepDraft);
  $("attention-code").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); runCode(); }
  });
  const data = JSON.parse($("editor-files").textContent || "{}");
  $("code-edit").addEventListener("change", (e) => { // a ready-made edit goes into the editor; nothing runs
    const edit = (data.edits && data.edits.edits || {})[e.target.value];
    setCodeText(edit ? edit.source : data.edits.original);
    keepDraft();
    $("code-look-for").textContent = edit ? edit.look_for : "";
  });
  // CodeMirror, from PyScript's bundle, only once the editor is on screen and Python is ready (editor.js).
  // No margin: at first paint the panels above are still inert templates, so the page is short and
  // the editor would count as near and cost the first screen its main thread.
  workerReady.then(() => new IntersectionObserver((entries, obs) => {
    if (!entries.some((e) => e.isIntersecting)) return;
    obs.disconnect();
    import("../editor.js").then((m) => m.upgrade($("attention-code"), data.files, runCode))
      .catch((err) => console.warn("the code editor could not load; the plain text box stays", err));
  }).observe($("code-card")));
}
