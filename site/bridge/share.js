// The panels' action buttons ([data-action] with data-target, the panel): a link to this view or an
// embed snippet shown in the share dialog (#share-dialog) to copy, a panel saved as SVG or PNG
// (export.js, imported only when a reader exports) or its data as a file; "use-model" switches to a model
// (downloading it first), "load-model" downloads a trained model only (model.js). A link, a snippet, a
// file and a figure's caption all come from Python's state, so they wait for Python. Text goes in via
// textContent / .value only.
//
// State: none.

import { chooseModel } from "./model.js";
import { $ } from "./page.js";
import { send } from "./queue.js";
import { notify } from "./status.js";
import { currentHref } from "./url.js";
import { worker } from "./worker.js";

function showShare(title, hint, text) {
  $("share-title").textContent = title;
  $("share-hint").textContent = hint;
  $("share-text").value = text;
  $("share-status").textContent = "";
  $("share-dialog").showModal();
  $("share-text").select();
  $("share-text").scrollTop = 0;
}

async function copyShareText() {
  try {
    await navigator.clipboard.writeText($("share-text").value);
    $("share-status").textContent = "Copied.";
  } catch {
    $("share-text").select();
    $("share-status").textContent = "Press Ctrl+C (⌘C) to copy the selected text.";
  }
}

export async function runAction(action, target) {
  if (action === "load-model") { chooseModel(target, null, false); return; }
  if (action === "use-model") { chooseModel(target); return; } // the first screen's switch (downloads first)
  if (!worker()) { // a link, a snippet, a file and a figure's caption all come from Python's state
    notify("Sharing and export work once Python has loaded (see the status line).");
    return;
  }
  try {
    await send({ type: "set_panel", value: target }); // the link and files name this panel
    if (action === "link") {
      showShare("Link to this view", "Opening it restores the sentence, query, head, sliders and this panel.",
        currentHref());
    } else if (action === "embed") {
      showShare("Embed this panel",
        "Paste into your page's HTML. The <script> sizes the frame; include it once per page.",
        await worker().sync.embed_snippet(currentHref()));
    } else {
      const ex = await import("../export.js");
      if (action === "svg" || action === "png") {
        // the figure's title and caption (sentence, model, head, settings) as plain text from Python
        const caption = await worker().sync.export_caption(target);
        const svg = await ex.panelToSvgText(document.querySelector(`[data-panel="${target}"]`), { caption });
        if (action === "svg") ex.download(svg, `attention-explorer-${target}.svg`, "image/svg+xml");
        else ex.download(await ex.svgTextToPngBlob(svg), `attention-explorer-${target}.png`, "image/png");
      } else {
        const file = await worker().sync.export_data(action);
        ex.download(file.text, file.filename, file.mime);
      }
    }
  } catch (err) {
    console.warn("action failed", err);
    const what = action === "link" || action === "embed" ? "share" : "export";
    notify(`Could not ${what} this panel: ${String(err.message || err).split("\n")[0]}`);
  }
}

if ($("share-copy")) $("share-copy").addEventListener("click", copyShareText);
