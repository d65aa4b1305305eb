// Present mode, for a projector (1280×720 at 150 % is a window of 853×480): the header's Present button
// shows only the sentence, its tokens, the two sliders and the heatmap, side by side and sized to the
// window (html.present, style.css); pressed again, or Escape, it goes back. The page's state is not
// changed: it is a way of looking at the same page.
//
// State: none (the class on <html> and the button's aria-pressed).

import { $, EMBED, root } from "./page.js";

function present(on) {
  root.classList.toggle("present", on);
  $("present-toggle")?.setAttribute("aria-pressed", String(on));
  if (on) window.scrollTo({ top: 0 });
}

if (!EMBED) {
  $("present-toggle")?.addEventListener("click", () => present(!root.classList.contains("present")));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && root.classList.contains("present") && !document.querySelector(".tour-card")) {
      present(false);
    }
  });
}
