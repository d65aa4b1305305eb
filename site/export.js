// Save a panel as a figure that stands alone: a standalone SVG file, or a PNG, and trigger downloads.
//
// A saved figure carries, as real SVG <text>: the panel's title and a caption (the sentence, the
// model, the head, T, √d_k…: plain text the worker writes, see page.export_caption), then the
// panel as the reader sees it: its pictures (<svg>s) and the HTML text around them (the heads'
// names, axis labels, legends, headings), each where it sits on the page. Views choose what is
// page-only with data-export-label on an element: "" leaves it out (instructions such as "hover
// a bar", long prose); any other value is written, as plain text, in its place. Gaps left by what
// is left out shrink, so the figure stays compact.
//
// The page styles its SVGs with CSS (classes and var(--...) colours in style.css), and a saved
// SVG has no stylesheet. So styledCopy copies the computed value of each property that changes
// how a picture looks onto the copy's elements, as a style attribute (an inherited property only
// where it differs from the parent's, any other only where it differs from its initial value);
// the HTML text and boxes (backgrounds, borders, gradient legends) are written with their
// computed colours and fonts. What the reader sees is what gets saved, in the current theme
// (light or dark), with the card colour behind it.
//
// Nothing here fetches anything or parses markup: pictures are copied with cloneNode, text is
// written with createTextNode (reader text can never become markup), the file is written with
// XMLSerializer, and the PNG is drawn from a same-origin Blob URL, so the canvas is never tainted.

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
  // the page's tooltips ("click to make it the query") are not part of a saved figure
  for (const t of copy.querySelectorAll("title, desc")) t.remove();
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

// ---------------------------------------------------------------- the panel as a figure

const MATHML_NS = "http://www.w3.org/1998/Math/MathML";
const PAD = 20;      // px around the figure
const MAX_GAP = 20;  // px: a taller empty band (left by text the export leaves out) shrinks to this
const SKIP = new Set(["script", "style", "template", "input", "select", "textarea", "option", "dialog", "noscript"]);

const px = (v) => parseFloat(v) || 0;
const fmt = (x) => String(Math.round(x * 100) / 100);

// A CSS colour as [SVG paint, opacity]: rgba() becomes rgb() plus an opacity, which every SVG reader knows.
function paint(color) {
  const m = /^rgba?\(([^)]*)\)$/.exec(String(color).trim());
  if (!m) return [color, color === "transparent" ? 0 : 1];
  const parts = m[1].split(/[\s,/]+/).filter(Boolean);
  let alpha = 1;
  if (parts.length > 3) alpha = parts[3].endsWith("%") ? parseFloat(parts[3]) / 100 : parseFloat(parts[3]);
  return [`rgb(${parts.slice(0, 3).join(",")})`, alpha];
}

let measureCtx = null;
// The font of a computed style as the canvas writes it, and its metrics (ascent and descent of the
// font's box, as a text box's height on the page is made of).
function fontOf(style, size = null) {
  return `${style.fontStyle} ${style.fontWeight} ${size ? size + "px" : style.fontSize} ${style.fontFamily}`;
}
function measure(font, text = "Hg") {
  measureCtx = measureCtx || document.createElement("canvas").getContext("2d");
  measureCtx.font = font;
  const m = measureCtx.measureText(text);
  const ascent = m.fontBoundingBoxAscent ?? m.actualBoundingBoxAscent ?? 0;
  const descent = m.fontBoundingBoxDescent ?? m.actualBoundingBoxDescent ?? 0;
  return { width: m.width, ascent, descent };
}

// Text split into lines no wider than `width` px in `font` (and at most `chars` characters); "\n"
// breaks too. A line breaks after a " · " between a caption's parts where it can, else between words.
export function wrapText(text, width, font, chars = 100) {
  const fits = (line) => measure(font, line).width <= width && line.length <= chars;
  const byWords = (t) => {
    const out = [];
    let cur = "";
    for (const word of t.split(/\s+/).filter(Boolean)) {
      const next = cur ? cur + " " + word : word;
      if (cur && !fits(next)) { out.push(cur); cur = word; } else cur = next;
    }
    if (cur) out.push(cur);
    return out;
  };
  const lines = [];
  for (const para of String(text).split("\n")) {
    const parts = para.split(" · ");
    let line = "";
    parts.forEach((part, k) => {
      const piece = part + (k < parts.length - 1 ? " ·" : "");
      const next = line ? line + " " + piece : piece;
      if (!line || fits(next)) { line = next; return; }
      lines.push(...byWords(line));
      line = piece;
    });
    lines.push(...byWords(line));
  }
  return lines;
}

function textStyle(style, alpha, extra = {}) {
  const [fill, opacity] = paint(style.color);
  const decl = { fill, "font-family": style.fontFamily, "font-size": style.fontSize };
  if (style.fontWeight !== "400") decl["font-weight"] = style.fontWeight;
  if (style.fontStyle !== "normal") decl["font-style"] = style.fontStyle;
  if (style.letterSpacing !== "normal" && px(style.letterSpacing)) decl["letter-spacing"] = style.letterSpacing;
  if (opacity * alpha < 1) decl["fill-opacity"] = fmt(opacity * alpha);
  Object.assign(decl, extra);
  return Object.entries(decl).map(([k, v]) => `${k}:${v}`).join(";");
}

function svgEl(name, attrs = {}) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) el.setAttribute(k, typeof v === "number" ? fmt(v) : v);
  return el;
}

// One line of text: written with createTextNode, so whatever it holds stays text.
function svgText(x, y, text, style, anchor = null, cls = "export-text") {
  const t = svgEl("text", { x, y, "text-anchor": anchor, class: cls, style });
  t.append(document.createTextNode(text.replace(NOT_XML, "")));
  return t;
}

function roundedRect(x, y, w, h, r) {
  r = Math.max(0, Math.min(r, w / 2, h / 2));
  if (!r) return `M${fmt(x)} ${fmt(y)}h${fmt(w)}v${fmt(h)}h${fmt(-w)}z`;
  return `M${fmt(x + r)} ${fmt(y)}h${fmt(w - 2 * r)}a${fmt(r)} ${fmt(r)} 0 0 1 ${fmt(r)} ${fmt(r)}v${fmt(h - 2 * r)}`
    + `a${fmt(r)} ${fmt(r)} 0 0 1 ${fmt(-r)} ${fmt(r)}h${fmt(-(w - 2 * r))}a${fmt(r)} ${fmt(r)} 0 0 1 ${fmt(-r)} ${fmt(-r)}`
    + `v${fmt(-(h - 2 * r))}a${fmt(r)} ${fmt(r)} 0 0 1 ${fmt(r)} ${fmt(-r)}z`;
}

function radius(style, w, h) {
  const r = style.borderTopLeftRadius;
  return Math.min(r.endsWith("%") ? (px(r) / 100) * w : px(r), w / 2, h / 2);
}

// linear-gradient(to right, rgb(…) 0%, rgb(…)) -> [[x1, y1, x2, y2], [[offset, colour], …]]; null if not one.
function linearGradient(image) {
  const m = /^linear-gradient\((.*)\)$/.exec(image.trim());
  if (!m) return null;
  const args = [];
  let depth = 0, cur = "";
  for (const ch of m[1]) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) { args.push(cur.trim()); cur = ""; } else cur += ch;
  }
  args.push(cur.trim());
  let dir = [0, 0, 0, 1];
  const ways = { "to right": [0, 0, 1, 0], "to left": [1, 0, 0, 0], "to bottom": [0, 0, 0, 1], "to top": [0, 1, 0, 0] };
  if (ways[args[0]]) dir = ways[args.shift()];
  else if (/deg$/.test(args[0])) {
    const a = (px(args.shift()) * Math.PI) / 180; // 0deg = to top, 90deg = to right
    const dx = Math.sin(a) / 2, dy = -Math.cos(a) / 2;
    dir = [0.5 - dx, 0.5 - dy, 0.5 + dx, 0.5 + dy];
  }
  const stops = args.map((a) => {
    const s = /^(.*?\)|[#\w]+)\s*(-?[\d.]+%)?$/.exec(a);
    return s ? [s[2] ? px(s[2]) / 100 : null, s[1]] : null;
  });
  if (stops.length < 2 || stops.includes(null)) return null;
  stops.forEach((s, k) => { if (s[0] === null) s[0] = k / (stops.length - 1); });
  return [dir, stops];
}

// A box-shadow that is only a ring (no offset, no blur, a spread): [colour, spread]; else null.
function ring(shadow) {
  const m = /^(rgba?\([^)]*\)|#\w+)\s+0px\s+0px\s+0px\s+([\d.]+)px$/.exec(String(shadow).trim());
  return m ? [m[1], px(m[2])] : null;
}

/** What one panel shows, collected from the page: items positioned in page coordinates. */
class Figure {
  constructor() {
    this.items = [];   // {left, top, right, bottom, clip, opacity, make(tx, ty, defs) -> SVG element}
    this.spans = [];   // extra vertical spans no gap may cut (boxes that clip their content)
    this.clips = [];   // clipping boxes (overflow: hidden), page coordinates
    this.ids = 0;
  }

  add(box, clip, make, extra = {}) {
    this.items.push({ left: box.left, top: box.top, right: box.right, bottom: box.bottom, clip, make, ...extra });
  }

  id(kind) { return `export-${kind}-${++this.ids}`; }
}

function visuallyHidden(style, box) {
  // screen-reader text (.sr-only): a 1 px box that clips its content
  return box.width <= 1 && box.height <= 1 && (style.overflow !== "visible" || style.clipPath !== "none");
}

function walk(fig, el, clip, alpha) {
  for (const node of el.childNodes) {
    if (node.nodeType === Node.TEXT_NODE) textRuns(fig, node, clip, alpha);
    else if (node.nodeType === Node.ELEMENT_NODE) element(fig, node, clip, alpha);
  }
}

function element(fig, el, clip, alpha) {
  if (SKIP.has(el.localName)) return;
  if (el.namespaceURI === SVG_NS) {
    if (el.localName === "svg") picture(fig, el, clip, alpha);
    return;
  }
  const style = getComputedStyle(el);
  if (style.display === "none") return;
  if (style.display === "contents") { walk(fig, el, clip, alpha); return; }
  const box = el.getBoundingClientRect();
  if (!el.getClientRects().length || visuallyHidden(style, box)) return;
  const label = el.getAttribute("data-export-label");
  if (label === "") return; // page-only: instructions, prose
  const a = alpha * parseFloat(style.opacity || "1");
  if (!(a > 0)) return;
  if (style.visibility === "visible") boxes(fig, el, style, clip, a);
  const before = pseudo(el, "::before"), after = pseudo(el, "::after");
  if (before) pseudoBox(fig, el, box, before, clip, a);
  if (label !== null) { labelText(fig, style, box, label, clip, a); return; }
  if (el.namespaceURI === MATHML_NS) mathLines(fig, el, style, clip, a);
  let inner = clip;
  if (["hidden", "clip"].includes(style.overflowX) || ["hidden", "clip"].includes(style.overflowY)) {
    inner = fig.clips.length;
    fig.clips.push({ left: box.left, top: box.top, right: box.right, bottom: box.bottom, parent: clip });
    fig.spans.push([box.top, box.bottom]);
  }
  const first = fig.items.length;
  walk(fig, el, inner, a);
  const texts = fig.items.slice(first).filter((it) => it.kind === "text"); // the element's own text, in order
  if (before) pseudoText(fig, el, box, before, texts[0], "before", inner, a);
  if (after) pseudoText(fig, el, box, after, texts[texts.length - 1], "after", inner, a);
}

function picture(fig, svg, clip, alpha) {
  const r = svg.getBoundingClientRect();
  if (!(r.width > 0 && r.height > 0)) return;
  const [copy] = styledCopy(svg);
  fig.add(r, clip, (tx, ty) => {
    copy.setAttribute("x", fmt(r.left + tx));
    copy.setAttribute("y", fmt(r.top + ty));
    return copy;
  }, { opacity: alpha });
}

// One text node as SVG <text>, a <text> per line it takes on the page (lines found from where each
// word is drawn), at the position, font and colour it has on the page.
function textRuns(fig, node, clip, alpha) {
  const data = node.data;
  if (!/\S/.test(data)) return;
  const parent = node.parentElement;
  const style = getComputedStyle(parent);
  if (style.visibility !== "visible") return;
  const range = document.createRange();
  const runs = [];
  for (const w of data.matchAll(/\S+/g)) {
    range.setStart(node, w.index);
    range.setEnd(node, w.index + w[0].length);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
    if (!rects.length) continue;
    const r = rects[0], last = rects[rects.length - 1];
    const run = runs[runs.length - 1];
    if (run && Math.abs(r.top - run.top) < 2 && r.left >= run.right - 1) {
      run.words.push(w[0]);
      run.right = last.right;
      run.bottom = Math.max(run.bottom, r.bottom);
    } else {
      runs.push({ left: r.left, top: r.top, right: last.right, bottom: r.bottom, words: [w[0]] });
    }
  }
  const upper = style.textTransform === "uppercase";
  // MathML draws a one-letter identifier (<mi>x</mi>) in italic
  const italic = parent.namespaceURI === MATHML_NS && parent.localName === "mi" && /^\p{L}$/u.test(data.trim())
    && parent.getAttribute("mathvariant") !== "normal";
  const font = fontOf(style);
  const m = measure(font);
  for (const run of runs) {
    let text = run.words.join(" ");
    if (upper) text = text.toUpperCase();
    const h = run.bottom - run.top;
    // a stretched MathML operator (a tall bracket, a big ∑): drawn to the height it has on the page
    if (parent.namespaceURI === MATHML_NS && parent.localName === "mo" && [...text].length === 1 && h > 1.7 * px(style.fontSize)) {
      if (stretchedBracket(fig, text, run, style, clip, alpha)) continue;
      const size = (px(style.fontSize) * h) / (m.ascent + m.descent);
      const ms = measure(fontOf(style, size));
      const base = run.top + (h - (ms.ascent + ms.descent)) / 2 + ms.ascent;
      const css = textStyle(style, alpha, { "font-size": fmt(size) + "px" });
      fig.add(run, clip, (tx, ty) => svgText(run.left + tx, base + ty, text, css), { baseline: base, kind: "text" });
      continue;
    }
    const base = run.top + (h - (m.ascent + m.descent)) / 2 + m.ascent;
    const css = textStyle(style, alpha, italic ? { "font-style": "italic" } : {});
    fig.add(run, clip, (tx, ty) => svgText(run.left + tx, base + ty, text, css), { baseline: base, kind: "text" });
  }
}

function stretchedBracket(fig, ch, r, style, clip, alpha) {
  if (!"()[]|".includes(ch)) return false;
  const [stroke, op] = paint(style.color);
  const w = Math.max(1, px(style.fontSize) * 0.07);
  const x0 = r.left + (r.right - r.left) * 0.25, x1 = r.right - (r.right - r.left) * 0.25;
  const y0 = r.top + 1, y1 = r.bottom - 1, ym = (y0 + y1) / 2;
  fig.add(r, clip, (tx, ty) => {
    const X = (x) => fmt(x + tx), Y = (y) => fmt(y + ty);
    const d = {
      "(": `M${X(x1)} ${Y(y0)}Q${X(x0 - (x1 - x0) * 0.6)} ${Y(ym)} ${X(x1)} ${Y(y1)}`,
      ")": `M${X(x0)} ${Y(y0)}Q${X(x1 + (x1 - x0) * 0.6)} ${Y(ym)} ${X(x0)} ${Y(y1)}`,
      "[": `M${X(x1)} ${Y(y0)}H${X(x0)}V${Y(y1)}H${X(x1)}`,
      "]": `M${X(x0)} ${Y(y0)}H${X(x1)}V${Y(y1)}H${X(x0)}`,
      "|": `M${X((x0 + x1) / 2)} ${Y(y0)}V${Y(y1)}`,
    }[ch];
    return svgEl("path", { d, fill: "none", stroke, "stroke-width": w, "stroke-opacity": op * alpha < 1 ? op * alpha : null });
  });
  return true;
}

// A fraction's bar and a square root's sign: MathML draws them with no text to copy.
function mathLines(fig, el, style, clip, alpha) {
  const [stroke, op] = paint(style.color);
  const width = Math.max(1, px(style.fontSize) * 0.066);
  const sop = op * alpha < 1 ? op * alpha : null;
  const r = el.getBoundingClientRect();
  if (el.localName === "mfrac" && el.children.length === 2 && el.getAttribute("linethickness") !== "0") {
    const a = el.children[0].getBoundingClientRect(), b = el.children[1].getBoundingClientRect();
    const y = (a.bottom + b.top) / 2;
    fig.add({ left: r.left, right: r.right, top: y - width, bottom: y + width }, clip, (tx, ty) =>
      svgEl("line", { x1: r.left + 1 + tx, x2: r.right - 1 + tx, y1: y + ty, y2: y + ty, stroke, "stroke-width": width, "stroke-opacity": sop }));
  }
  if ((el.localName === "msqrt" || el.localName === "mroot") && el.children.length) {
    const base = (el.localName === "mroot" ? [el.children[0]] : [...el.children]).map((c) => c.getBoundingClientRect());
    const left = Math.min(...base.map((b) => b.left));
    const top = r.top + width, bottom = r.bottom - width / 2, h = bottom - top, rw = Math.max(4, left - r.left);
    fig.add(r, clip, (tx, ty) => svgEl("path", {
      d: `M${fmt(r.left + tx)} ${fmt(top + h * 0.62 + ty)}L${fmt(r.left + rw * 0.25 + tx)} ${fmt(top + h * 0.55 + ty)}`
        + `L${fmt(r.left + rw * 0.5 + tx)} ${fmt(bottom + ty)}L${fmt(left - 1 + tx)} ${fmt(top + ty)}H${fmt(r.right + tx)}`,
      fill: "none", stroke, "stroke-width": width, "stroke-opacity": sop, "stroke-linejoin": "round",
    }));
  }
}

// Backgrounds (colour or linear gradient), borders and ring shadows of one element.
function boxes(fig, el, style, clip, alpha) {
  const [bg, bgAlpha] = paint(style.backgroundColor);
  const grad = style.backgroundImage && style.backgroundImage !== "none" ? linearGradient(style.backgroundImage) : null;
  const sides = ["Top", "Right", "Bottom", "Left"].map((s) => {
    const w = px(style[`border${s}Width`]), [c, a] = paint(style[`border${s}Color`]);
    return w > 0 && !["none", "hidden"].includes(style[`border${s}Style`]) && a > 0 ? { w, c, a } : null;
  });
  const shadow = ring(style.boxShadow);
  if (!(bgAlpha > 0) && !grad && !sides.some(Boolean) && !shadow) return;
  const rects = style.display === "inline" ? [...el.getClientRects()] : [el.getBoundingClientRect()];
  if (!(bgAlpha > 0) && !grad && !shadow && !sides.every(Boolean)) {
    // only some borders (a rule above a section, a line under a heading): each side is its own item,
    // so the empty space inside the box can still shrink
    for (const r of rects) {
      sides.forEach((side, k) => {
        if (!side) return;
        const band = [[r.left, r.top, r.width, side.w], [r.right - side.w, r.top, side.w, r.height],
          [r.left, r.bottom - side.w, r.width, side.w], [r.left, r.top, side.w, r.height]][k];
        fig.add({ left: band[0], top: band[1], right: band[0] + band[2], bottom: band[1] + band[3] }, clip, (tx, ty) =>
          svgEl("rect", { x: band[0] + tx, y: band[1] + ty, width: band[2], height: band[3], fill: side.c,
            "fill-opacity": side.a * alpha < 1 ? side.a * alpha : null }));
      });
    }
    return;
  }
  for (const r of rects) {
    const w = r.width, h = r.height;
    if (!(w > 0 && h > 0)) continue;
    const rad = radius(style, w, h);
    const grow = shadow ? shadow[1] : 0;
    const area = { left: r.left - grow, top: r.top - grow, right: r.right + grow, bottom: r.bottom + grow };
    fig.add(area, clip, (tx, ty, defs) => {
      const g = svgEl("g", { class: "export-box" });
      const x = r.left + tx, y = r.top + ty;
      if (shadow) {
        const [c, a] = paint(shadow[0]);
        g.append(svgEl("path", { d: roundedRect(x - grow / 2, y - grow / 2, w + grow, h + grow, rad + grow / 2), fill: "none",
          stroke: c, "stroke-width": grow, "stroke-opacity": a * alpha < 1 ? a * alpha : null }));
      }
      if (bgAlpha > 0) g.append(svgEl("path", { d: roundedRect(x, y, w, h, rad), fill: bg, "fill-opacity": bgAlpha * alpha < 1 ? bgAlpha * alpha : null }));
      if (grad) {
        const id = fig.id("gradient");
        const lg = svgEl("linearGradient", { id, x1: grad[0][0], y1: grad[0][1], x2: grad[0][2], y2: grad[0][3] });
        const stops = grad[1].map(([offset, colour]) => [offset, ...paint(colour)]);
        stops.forEach(([offset, c, a], k) => {
          // CSS fades to "transparent" in premultiplied colour: towards each neighbour's own hue, not grey
          const sides = a > 0 ? [c] : [stops[k - 1], stops[k + 1]].filter(Boolean).map((n) => n[1]);
          for (const hue of sides.length ? sides : [c])
            lg.append(svgEl("stop", { offset, "stop-color": hue, "stop-opacity": a < 1 ? a : null }));
        });
        defs.append(lg);
        g.append(svgEl("path", { d: roundedRect(x, y, w, h, rad), fill: `url(#${id})`, "fill-opacity": alpha < 1 ? alpha : null }));
      }
      const present = sides.filter(Boolean);
      if (present.length) {
        // the most common side colour as a rounded frame; sides of another colour or width drawn over it
        const main = present.find((s) => present.filter((t) => t.c === s.c && t.w === s.w).length >= 2) || present[0];
        const [bt, br, bb, bl] = sides.map((s) => (s ? s.w : 0));
        const frame = roundedRect(x, y, w, h, rad) + roundedRect(x + bl, y + bt, w - bl - br, h - bt - bb, Math.max(0, rad - Math.max(bt, bl)));
        const odd = sides.filter((s) => s && (s.c !== main.c || s.w !== main.w));
        if (odd.length === 0) {
          g.append(svgEl("path", { d: frame, "fill-rule": "evenodd", fill: main.c, "fill-opacity": main.a * alpha < 1 ? main.a * alpha : null }));
        } else {
          const cid = fig.id("clip");
          const cp = svgEl("clipPath", { id: cid });
          cp.append(svgEl("path", { d: frame, "clip-rule": "evenodd" }));
          defs.append(cp);
          const bands = svgEl("g", { "clip-path": `url(#${cid})` });
          const band = [[x, y, w, bt], [x + w - br, y, br, h], [x, y + h - bb, w, bb], [x, y, bl, h]];
          // the main colour first, then the odd sides over it
          sides.forEach((s, k) => { if (s && s.c === main.c && s.w === main.w) bands.append(svgEl("rect", { x: band[k][0], y: band[k][1], width: band[k][2], height: band[k][3], fill: s.c, "fill-opacity": s.a * alpha < 1 ? s.a * alpha : null })); });
          sides.forEach((s, k) => { if (s && (s.c !== main.c || s.w !== main.w)) bands.append(svgEl("rect", { x: band[k][0], y: band[k][1], width: band[k][2], height: band[k][3], fill: s.c, "fill-opacity": s.a * alpha < 1 ? s.a * alpha : null })); });
          g.append(bands);
        }
      }
      return g;
    });
  }
}

// ::before / ::after: generated text ("✓", a row number) or a positioned box (a legend swatch).
function pseudo(el, which) {
  const ps = getComputedStyle(el, which);
  const content = ps.content;
  if (!content || content === "none" || content === "normal" || ps.display === "none") return null;
  let text = "";
  const re = /"((?:[^"\\]|\\.)*)"|attr\(\s*([\w-]+)\s*\)|(open-quote)|(close-quote)/g;
  for (const m of content.matchAll(re)) {
    if (m[1] !== undefined) text += m[1].replace(/\\(.)/g, "$1");
    else if (m[2]) text += el.getAttribute(m[2]) || "";
    else text += m[3] ? "“" : "”";
  }
  return { style: ps, text };
}

function pseudoBox(fig, el, box, ps, clip, alpha) {
  const st = ps.style;
  if (!["absolute", "fixed"].includes(st.position)) return;
  const [bg, a] = paint(st.backgroundColor);
  const op = a * alpha * parseFloat(st.opacity || "1");
  if (!(op > 0)) return;
  const inset = { left: box.left + px(st.left), top: box.top + px(st.top), right: box.right - px(st.right), bottom: box.bottom - px(st.bottom) };
  fig.add(inset, clip, (tx, ty) => svgEl("rect", { x: inset.left + tx, y: inset.top + ty, width: inset.right - inset.left,
    height: inset.bottom - inset.top, fill: bg, "fill-opacity": op < 1 ? op : null }));
}

// Generated text goes just before the element's first line of text (::before) or after its last (::after).
function pseudoText(fig, el, box, ps, anchor, where, clip, alpha) {
  const st = ps.style;
  if (["absolute", "fixed"].includes(st.position) || !ps.text.trim()) return;
  const font = fontOf(st), m = measure(font, ps.text);
  const text = ps.text;
  let x, base;
  if (anchor) {
    base = anchor.baseline;
    x = where === "before" ? anchor.left - m.width : anchor.right;
  } else {
    x = box.left + px(getComputedStyle(el).paddingLeft);
    base = box.top + (box.height - (m.ascent + m.descent)) / 2 + m.ascent;
  }
  const css = textStyle(st, alpha * parseFloat(st.opacity || "1"), { "white-space": "pre" });
  fig.add({ left: x, right: x + m.width, top: base - m.ascent, bottom: base + m.descent }, clip,
    (tx, ty) => {
      const t = svgText(x + tx, base + ty, text, css);
      t.setAttributeNS("http://www.w3.org/XML/1998/namespace", "xml:space", "preserve");
      return t;
    }, { kind: "text", baseline: base });
}

// data-export-label="…": the view's own words for an element, written in its place (wrapped to its width).
function labelText(fig, style, box, label, clip, alpha) {
  const font = fontOf(style), m = measure(font);
  const padL = px(style.paddingLeft) + px(style.borderLeftWidth), padR = px(style.paddingRight) + px(style.borderRightWidth);
  const padT = px(style.paddingTop) + px(style.borderTopWidth);
  const width = Math.max(40, box.width - padL - padR);
  const lh = style.lineHeight === "normal" ? 1.25 * px(style.fontSize) : px(style.lineHeight);
  const centred = style.textAlign === "center" || (/flex|grid/.test(style.display) && style.justifyContent === "center");
  const css = textStyle(style, alpha);
  wrapText(label, width, font, 400).forEach((line, k) => {
    const top = box.top + padT + k * lh;
    const base = top + (lh - (m.ascent + m.descent)) / 2 + m.ascent;
    const w = measure(font, line).width;
    const x = centred ? box.left + padL + width / 2 : box.left + padL;
    const left = centred ? x - w / 2 : x;
    fig.add({ left, right: left + w, top, bottom: top + lh }, clip,
      (tx, ty) => svgText(x + tx, base + ty, line, css, centred ? "middle" : null, "export-label"), { kind: "text", baseline: base });
  });
}

/** Everything the panel shows, collected from the page (see the file's header). */
function collect(container) {
  const fig = new Figure();
  walk(fig, container, null, 1);
  return fig;
}

// Empty bands taller than MAX_GAP (left by what the export leaves out) shrink to MAX_GAP.
// Returns y -> how far content at y moves up.
function gapShift(items, spans) {
  const all = [...items.map((it) => [it.top, it.bottom]), ...spans].sort((a, b) => a[0] - b[0]);
  const cuts = [];
  let end = all[0][1];
  for (const [top, bottom] of all.slice(1)) {
    if (top - end > MAX_GAP) cuts.push([top, top - end - MAX_GAP]);
    end = Math.max(end, bottom);
  }
  return (y) => cuts.reduce((sum, [at, by]) => (y >= at - 0.01 ? sum + by : sum), 0);
}

/**
 * The panel as the text of a standalone SVG file: a header with the caption's title, caption and
 * note (plain text from the worker's export_caption; none when caption is null), then everything
 * the panel shows (see the file's header), styled as on the page, with the colour behind it on
 * the page as a first rect (pass {background: null} for none).
 */
export async function panelToSvgText(container, { background = backgroundOf(container), caption = null } = {}) {
  const fig = collect(container);
  if (fig.items.length === 0) throw new Error("this panel shows nothing to save (is it hidden?)");
  const items = fig.items;
  const shift = gapShift(items, fig.spans);
  const left = Math.min(...items.map((it) => it.left)), right = Math.max(...items.map((it) => it.right));
  const top = Math.min(...items.map((it) => it.top));
  const bodyWidth = right - left;

  // the header: title, caption lines, the model's note; wrapped to the figure's width
  const rootStyle = getComputedStyle(document.documentElement);
  const family = rootStyle.fontFamily;
  const ink = getComputedStyle(container).color;
  const muted = rootStyle.getPropertyValue("--muted").trim() || ink;
  const headWidth = Math.max(bodyWidth, 420);
  const header = [];
  let y = PAD;
  const line = (text, size, weight, colour, italic, cls, chars = 90) => {
    const font = `${italic ? "italic" : "normal"} ${weight} ${size}px ${family}`;
    const lines = wrapText(text, headWidth, font, chars);
    const m = measure(font);
    for (const l of lines) {
      const [fill, op] = paint(colour);
      const style = [`fill:${fill}`, `font-family:${family}`, `font-size:${size}px`, `font-weight:${weight}`,
        italic ? "font-style:italic" : "", op < 1 ? `fill-opacity:${fmt(op)}` : ""].filter(Boolean).join(";");
      header.push([l, y + m.ascent, style, cls]);
      y += Math.ceil(size * 1.35);
    }
  };
  if (caption && caption.title) { line(caption.title, 20, 700, ink, false, "export-title"); y += 4; }
  if (caption && caption.caption) line(caption.caption, 13.5, 400, ink, false, "export-caption", 110);
  if (caption && caption.note) line(caption.note, 12.5, 400, muted, true, "export-note");
  const bodyTop = header.length ? y + 12 : PAD;

  const lowest = Math.max(...items.map((it) => it.bottom - shift(it.top)));
  const width = Math.ceil(Math.max(bodyWidth, header.length ? headWidth : 0) + 2 * PAD);
  const height = Math.ceil(bodyTop + (lowest - top) + PAD);
  const out = svgEl("svg", { viewBox: `0 0 ${width} ${height}`, width, height });
  out.setAttributeNS(XMLNS_NS, "xmlns", SVG_NS);
  out.setAttributeNS(XMLNS_NS, "xmlns:xlink", XLINK_NS);
  if (caption && caption.title) out.append(Object.assign(svgEl("title"), { textContent: caption.title }));
  if (background) out.append(backgroundRect(0, 0, width, height, background));
  const defs = svgEl("defs");
  out.append(defs);
  for (const [text, baseline, style, cls] of header) out.append(svgText(PAD, baseline, text, style, null, cls));

  const tx = PAD - left;
  const ty = (it) => bodyTop - top - shift(it.top);
  const clipIds = new Map();
  const clipFor = (k, dy) => { // one <clipPath> per clipping box (nested ones intersect via the parent)
    if (!clipIds.has(k)) {
      const c = fig.clips[k], id = fig.id("overflow");
      const cp = svgEl("clipPath", { id, "clip-path": c.parent !== null ? `url(#${clipFor(c.parent, dy)})` : null });
      const cdy = bodyTop - top - shift(c.top);
      cp.append(svgEl("rect", { x: c.left + tx, y: c.top + cdy, width: c.right - c.left, height: c.bottom - c.top }));
      defs.append(cp);
      clipIds.set(k, id);
    }
    return clipIds.get(k);
  };
  for (const it of items) {
    let el = it.make(tx, ty(it), defs);
    if (it.opacity !== undefined && it.opacity < 1) el.setAttribute("opacity", fmt(it.opacity));
    if (it.clip !== null && it.clip !== undefined) {
      const g = svgEl("g", { "clip-path": `url(#${clipFor(it.clip, ty(it))})` });
      g.append(el);
      el = g;
    }
    out.append(el);
  }
  if (!defs.childNodes.length) defs.remove();
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
