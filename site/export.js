// Save a panel's picture: as a standalone SVG file, or as a PNG, and trigger downloads.
//
// The page styles its SVGs with CSS (classes and var(--...) colours in style.css),
// and a saved SVG has no stylesheet. So panelToSvgText copies the computed value of
// each property that changes how the picture looks onto the copy's elements, as a
// style attribute. To keep files small it writes an inherited property only where it
// differs from the parent's, and any other one only where it differs from its
// initial value. What the reader sees is what gets saved, in the current theme
// (light or dark), with the card colour behind it.
//
// Nothing here fetches anything or parses markup: the copy is made with cloneNode
// and written with XMLSerializer, and the PNG is drawn from a same-origin Blob URL,
// so the canvas is never tainted.

const SVG_NS = "http://www.w3.org/2000/svg";
const XMLNS_NS = "http://www.w3.org/2000/xmlns/";
const XLINK_NS = "http://www.w3.org/1999/xlink";

// Properties that are inherited in SVG: written where they differ from the parent's value.
const INHERITED = [
  "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width", "stroke-opacity", "stroke-dasharray",
  "stroke-linecap", "stroke-linejoin", "paint-order", "font-family", "font-size", "font-weight",
  "font-style", "font-variant-numeric", "text-anchor", "dominant-baseline", "letter-spacing",
  "visibility", "direction", "image-rendering", "shape-rendering",
];
// Properties that are not inherited: written where they differ from their initial value.
const NOT_INHERITED = {
  "opacity": "1", "display": "inline", "vector-effect": "none", "unicode-bidi": "normal",
  "stop-color": "rgb(0, 0, 0)", "stop-opacity": "1", "mask-type": "luminance",
};
const STYLE_PROPERTIES = [...INHERITED, ...Object.keys(NOT_INHERITED)];

function area(svg) {
  const r = svg.getBoundingClientRect();
  if (r.width * r.height > 0) return r.width * r.height;
  const vb = svg.viewBox && svg.viewBox.baseVal;
  return vb ? vb.width * vb.height : 0;
}

// The panel's pictures: its drawn <svg>s (not nested in another svg), in page order.
function panelSvgs(container) {
  const svgs = [...container.querySelectorAll("svg")].filter((s) => !s.parentElement.closest("svg"));
  if (svgs.length === 0) throw new Error("this panel has no picture (no <svg>) to save");
  const drawn = svgs.filter((s) => area(s) > 0 && s.getBoundingClientRect().width > 0);
  return drawn.length ? drawn : [svgs.reduce((best, s) => (area(s) > area(best) ? s : best))];
}

// The colour behind an element: the first ancestor with a non-transparent background.
export function backgroundOf(el) {
  for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
    const bg = getComputedStyle(e).backgroundColor;
    if (bg && bg !== "transparent" && !/^rgba\(.*,\s*0\)$/.test(bg)) return bg;
  }
  return getComputedStyle(document.documentElement).getPropertyValue("--card").trim() || "white";
}

// url("http://host/page#id") or url("#id") -> url(#id): references stay inside the file.
function localUrls(value) {
  return value.replace(/url\((["']?)[^)"']*?(#[^)"']+)\1\)/g, "url($2)");
}

function inlineStyles(original, copy, parentStyle) {
  const style = getComputedStyle(original);
  const decls = [];
  for (const prop of STYLE_PROPERTIES) {
    const value = style.getPropertyValue(prop);
    if (!value) continue;
    let differs;
    if (prop in NOT_INHERITED) differs = value !== NOT_INHERITED[prop] && !(prop === "display" && !parentStyle);
    else differs = !parentStyle || value !== parentStyle.getPropertyValue(prop); // the root gets them all
    // a presentation attribute (fill="...") would beat the inherited value: override it too
    if (differs || copy.hasAttribute(prop)) decls.push(`${prop}:${localUrls(value)}`);
  }
  const own = parentStyle ? copy.getAttribute("style") : null; // the root's own style is page layout
  const text = [own, decls.join(";")].filter(Boolean).join(";");
  if (text) copy.setAttribute("style", text); else copy.removeAttribute("style");
  // page-only attributes: keyboard focus, the page's tooltip and event hooks
  copy.removeAttribute("tabindex");
  copy.removeAttribute("aria-describedby");
  for (const name of copy.getAttributeNames()) if (name.startsWith("data-")) copy.removeAttribute(name);
  const kids = [...original.children], copies = [...copy.children];
  for (let i = 0; i < kids.length; i++) {
    if (kids[i].localName === "title" || kids[i].localName === "desc") continue;
    inlineStyles(kids[i], copies[i], style);
  }
}

// Characters XML 1.0 forbids (control characters, lone surrogates): never in our tokens, but a
// saved file must parse whatever the page held.
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

// A styled copy of one <svg>, sized as drawn on the page (so strokes and text keep their
// on-screen proportions, even in a picture the page scales a lot, like the heads' thumbnails);
// the viewBox size when it is not drawn. Returns [copy, viewBox, width, height].
function styledCopy(svg) {
  const copy = svg.cloneNode(true);
  inlineStyles(svg, copy, null);
  const r = svg.getBoundingClientRect();
  let vb = svg.viewBox.baseVal;
  if (!vb || !(vb.width > 0 && vb.height > 0)) {
    vb = { x: 0, y: 0, width: r.width, height: r.height };
    copy.setAttribute("viewBox", `0 0 ${r.width} ${r.height}`);
  }
  const drawn = r.width > 0 && r.height > 0;
  const width = drawn ? r.width : vb.width, height = drawn ? r.height : vb.height;
  if (!(width > 0 && height > 0)) throw new Error("this panel's picture has no size (is it hidden?)");
  copy.setAttribute("width", String(Math.round(width * 100) / 100));
  copy.setAttribute("height", String(Math.round(height * 100) / 100));
  return [copy, vb, width, height];
}

function backgroundRect(x, y, width, height, fill) {
  const rect = document.createElementNS(SVG_NS, "rect");
  for (const [k, v] of Object.entries({ x, y, width, height, fill })) rect.setAttribute(k, String(v));
  rect.setAttribute("class", "export-background");
  return rect;
}

/**
 * The panel's pictures as the text of a standalone SVG file, styled as on the page. One <svg>
 * is saved as it is; several (a panel of strips and charts) are laid out in one file where they
 * sit on the page. Width and height are the size on the page, with the colour behind it on the
 * page as a first rect (pass {background: null} for none). The panel's HTML text is not saved.
 */
export async function panelToSvgText(container, { background = backgroundOf(container) } = {}) {
  const svgs = panelSvgs(container);
  let out;
  if (svgs.length === 1) {
    const [copy, vb] = styledCopy(svgs[0]);
    if (background) copy.prepend(backgroundRect(vb.x, vb.y, vb.width, vb.height, background));
    out = copy;
  } else {
    const boxes = svgs.map((s) => s.getBoundingClientRect());
    const left = Math.min(...boxes.map((b) => b.left)), top = Math.min(...boxes.map((b) => b.top));
    const width = Math.max(...boxes.map((b) => b.right)) - left;
    const height = Math.max(...boxes.map((b) => b.bottom)) - top;
    out = document.createElementNS(SVG_NS, "svg");
    out.setAttribute("viewBox", `0 0 ${width} ${height}`);
    out.setAttribute("width", String(Math.round(width * 100) / 100));
    out.setAttribute("height", String(Math.round(height * 100) / 100));
    if (background) out.append(backgroundRect(0, 0, width, height, background));
    svgs.forEach((svg, k) => {
      const [copy] = styledCopy(svg);
      copy.setAttribute("x", String(boxes[k].left - left));
      copy.setAttribute("y", String(boxes[k].top - top));
      out.append(copy);
    });
  }
  out.setAttributeNS(XMLNS_NS, "xmlns", SVG_NS);
  out.setAttributeNS(XMLNS_NS, "xmlns:xlink", XLINK_NS);
  const text = new XMLSerializer().serializeToString(out).replace(NOT_XML, "");
  return `<?xml version="1.0" encoding="UTF-8"?>\n${text}\n`;
}

/**
 * An SVG file's text (with width and height, as panelToSvgText makes it) drawn as a PNG Blob of
 * width·scale × height·scale pixels, on a solid background (default: the page's --card colour,
 * or white).
 */
export async function svgTextToPngBlob(svgText, scale = 2, background = null) {
  const doc = new DOMParser().parseFromString(svgText, "image/svg+xml");
  const root = doc.documentElement;
  if (doc.getElementsByTagName("parsererror").length || root.localName !== "svg")
    throw new Error("not an SVG file");
  const width = Math.round(parseFloat(root.getAttribute("width")) * scale);
  const height = Math.round(parseFloat(root.getAttribute("height")) * scale);
  if (!(width > 0 && height > 0)) throw new Error("the SVG has no width and height to draw at");

  const url = URL.createObjectURL(new Blob([svgText], { type: "image/svg+xml;charset=utf-8" }));
  try {
    const img = new Image();
    await new Promise((resolve, reject) => {
      img.onload = resolve;
      img.onerror = () => reject(new Error("the browser could not draw the SVG"));
      img.src = url;
    });
    const canvas = document.createElement("canvas");
    canvas.width = width;
    canvas.height = height;
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = background
      || getComputedStyle(document.documentElement).getPropertyValue("--card").trim() || "white";
    ctx.fillRect(0, 0, width, height);
    ctx.drawImage(img, 0, 0, width, height);
    return await new Promise((resolve, reject) =>
      canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("the picture is too large for a PNG"))), "image/png"));
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Save a Blob (or text, made into a Blob of type `mime`) as a file named `filename`. */
export function download(blobOrText, filename, mime = "application/octet-stream") {
  const blob = blobOrText instanceof Blob ? blobOrText : new Blob([blobOrText], { type: mime });
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  // some browsers read the URL after click() returns; revoke once the download has surely started
  setTimeout(() => URL.revokeObjectURL(url), 30000);
}
