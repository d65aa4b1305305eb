// Drives Debian's stock Firefox ESR for tests/engines/drivers.py, over WebDriver BiDi through
// puppeteer-core (pinned in package.json/package-lock.json). Python writes one JSON request per line
// on stdin, {id, op, ...}; each gets one JSON line on stdout, {id, value} or {id, error}.
//
//   node firefox_driver.mjs FIREFOX_BINARY ALLOWED_ORIGIN...
//
// ops: open {width, height}; goto {url}; run {source, args, frame} (source: a JS function, awaited in
// the page, or in its frame-th iframe); click {selector}; press {selector, key}; resize {width, height}; screenshot {path};
// problems (console errors, page errors and requests to hosts other than ALLOWED_ORIGIN, each once);
// close. One page at a time: `open` closes the one before.

import { createInterface } from "node:readline";
import puppeteer from "puppeteer-core";

const [binary, ...allowed] = process.argv.slice(2);
let browser = null, page = null;
const problems = [];

function watch(p) {
  p.on("console", (m) => { if (m.type() === "error") problems.push(`console error: ${m.text()}`); });
  p.on("pageerror", (e) => problems.push(`page error: ${e?.message ?? e}`));
  p.on("request", (r) => {
    const url = r.url();
    if (!url.startsWith("data:") && !url.startsWith("blob:") && !allowed.some((o) => url.startsWith(o)))
      problems.push(`request to another host: ${url}`);
  });
}

const ops = {
  async open({ width, height }) {
    browser ??= await puppeteer.launch({ browser: "firefox", executablePath: binary, headless: true });
    if (page) await page.close();
    page = await browser.newPage();
    watch(page);
    await page.setViewport({ width, height });
    return await browser.version();
  },
  async goto({ url }) { await page.goto(url, { waitUntil: "load", timeout: 120_000 }); },
  async run({ source, args, frame }) {
    const where = frame == null ? page : page.mainFrame().childFrames()[frame];
    if (!where) throw new Error(`the page has no frame ${frame}`);
    return await where.evaluate(([src, a]) => (0, eval)(`(${src})`)(...a), [source, args ?? []]);
  },
  async click({ selector }) { await page.click(selector); },
  async press({ selector, key }) { await page.focus(selector); await page.keyboard.press(key); },
  async resize({ width, height }) { await page.setViewport({ width, height }); },
  async screenshot({ path }) { await page.screenshot({ path }); },
  async problems() { return problems.splice(0); },
  async close() { await browser?.close(); browser = null; },
};

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const { id, op, ...args } = JSON.parse(line);
  let reply;
  try {
    const value = await ops[op](args);
    reply = { id, value: value ?? null };
  } catch (e) {
    reply = { id, error: String(e?.stack ?? e) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
  if (op === "close") break;
}
await browser?.close();
