// The code editor for "Your own attention function": CodeMirror 6 with Python highlighting, from the
// chunks PyScript's bundle already ships (pinned and verified with PyScript; build.py names them in the
// page's #editor-files). Imported by bridge/code.js only when the editor comes near the screen, so it costs
// nothing at first paint.
//
// The <textarea id="attention-code"> stays the source of truth for the rest of the page (the stable
// hook: its .value is the editor's text): every edit here is copied into it (with a "reader-edit" event),
// and an "input" event on it (a ready-made edit, a reset, a link) is copied into the editor. Tab leaves
// the editor (no tab trapping: indent with spaces); Ctrl/Cmd+Enter runs.

export async function upgrade(textarea, files, run) {
  const [{ EditorView, basicSetup }, { python }] = await Promise.all([
    import(new URL(files.view, document.baseURI).href),
    import(new URL(files.python, document.baseURI).href),
  ]);
  let syncing = false;
  const view = new EditorView({
    doc: textarea.value,
    extensions: [
      basicSetup,
      python(),
      EditorView.lineWrapping,
      EditorView.contentAttributes.of({
        "aria-labelledby": "attention-code-label",
        "aria-describedby": textarea.getAttribute("aria-describedby") || "",
      }),
      EditorView.updateListener.of((update) => {
        if (!update.docChanged || syncing) return;
        textarea.value = update.state.doc.toString();
        textarea.dispatchEvent(new Event("reader-edit")); // the reader typed: the bridge keeps the draft
      }),
    ],
  });
  textarea.addEventListener("input", () => {
    const text = textarea.value;
    if (text === view.state.doc.toString()) return;
    syncing = true;
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    syncing = false;
  });
  // Ctrl/Cmd+Enter runs: caught on the way down (capture), before CodeMirror's own keymap inserts a line
  view.dom.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); e.stopPropagation(); run(); }
  }, true);
  textarea.insertAdjacentElement("afterend", view.dom);
  textarea.hidden = true;
  view.dom.classList.add("code-mirror");
  return view;
}
