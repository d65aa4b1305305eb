// The events on their way to Python: one in flight at a time, and a newer event of the same type
// replaces a queued one, so dragging a slider never builds a backlog. send() resolves once the event
// has been run and its reply applied. Running one is not this module's business: start-up hands it the
// function that does (handleEventsWith), so that the modules which apply replies can send events
// without an import cycle.
//
// State:
//   queue      the events waiting: {event, done: [resolve, ...]}
//   computing  the event Python is computing now (one at a time), or null
//   handle     the function that runs one event (dispatch.js's runEvent, set once at start-up)
//   typing     the text box whose event waits for a pause in typing, or null; textTimer, that pause
//   lastHover  the last hover event sent (a repeat is not sent again)
//   sentLog    the last 100 events sent (types; ":follow" for the stepper following the scroll), for tests

import { eventFrom } from "./event-from.js";
import { worker } from "./worker.js";

const queue = [];
let computing = null;
let handle = null;
let lastHover = "";
export const sentLog = [];

export function handleEventsWith(fn) {
  handle = fn;
}

// Events of the page's own bookkeeping (what is on screen, a patch that did not fit, the reader's last
// good function run again after a restart): their replies leave the reader's messages alone (a message
// about a bad sentence must not vanish when a panel scrolls in, nor the one saying why Python was
// restarted), unless they bring one of their own; and they leave the reader's typing alone.
const BOOKKEEPING = new Set(["viewport", "redraw"]);
export const isBookkeeping = (event) => Boolean(event && (BOOKKEEPING.has(event.type) || event.restore));

// A text box's event waits for a pause in typing (150 ms). The reader's next event sends it first (typed,
// then clicked: the sentence comes first), and no reply puts the sentence Python has back in the box
// meanwhile (a stage chosen within 150 ms of the last key did: the typed sentence was lost). The page's
// own events (what is on screen, a hover's tip) leave the typing alone.
let typing = null;
let textTimer = 0;
export function typeInto(el) {
  clearTimeout(textTimer);
  typing = el;
  textTimer = setTimeout(flushTyping, 150);
}
function flushTyping() {
  clearTimeout(textTimer);
  const el = typing;
  typing = null;
  if (el) send(eventFrom(el));
}
export const typingBox = () => typing;

export const send = (event) => enqueue(event, false);

// Hovering or focusing an element with data-hover-event sends that event (e.g. a heatmap cell of the
// query's row chooses the key the Q·K breakdown takes apart); repeats of the last one are skipped.
export function sendHover(event) {
  const key = `${event.type}:${event.value}`;
  if (!worker() || key === lastHover) return;
  lastHover = key;
  enqueue(event, true);
}

function enqueue(event, fromHover) {
  if (typing && event.type !== typing.dataset.event && !fromHover && !isBookkeeping(event)) flushTyping();
  if (!fromHover) lastHover = ""; // any other event may change what a hover would choose
  sentLog.push(event.type + (event.follow ? ":follow" : ""));
  if (sentLog.length > 100) sentLog.shift();
  return new Promise((resolve) => {
    // a newer event replaces a queued one of its type (a slider's moves), but a redraw is per panel
    const queued = queue.find((q) => q.event.type === event.type
      && (event.type !== "redraw" || q.event.value === event.value));
    if (queued) { queued.event = event; queued.done.push(resolve); }
    else queue.push({ event, done: [resolve] });
    pump();
  });
}

// The next event, if Python is free (and there is a worker: events made while one starts wait).
export async function pump() {
  if (computing || !worker() || queue.length === 0) return;
  const { event, done } = queue.shift();
  computing = event;
  try {
    await handle(event);
  } finally {
    computing = null;
    done.forEach((resolve) => resolve());
    pump();
  }
}

// The types of the events still queued: a control whose newer event waits keeps what the reader set.
export const queuedTypes = () => new Set(queue.map((q) => q.event.type));

// For the test hook (attentionExplorer.idle / .waiting)
export const idle = () => Boolean(worker()) && !computing && queue.length === 0 && !typing;
export const waiting = () => ({ computing: computing && computing.type, queued: queue.map((q) => q.event.type),
                                typing: Boolean(typing) });
