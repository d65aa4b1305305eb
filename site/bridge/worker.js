// The handle on Python's worker: the one running, or none while one starts (at first, or after a
// restart replaced one the reader's code hung or ended). Starting one is launch.js's job and boot.js's.
//
// State:
//   current   the running worker, or null while one starts
//   waiters   calls made while none runs, resolved with the next one (whenWorker)
//   workerReady  a promise resolved once, when the first worker runs (what waits for Python at all)

let current = null;
let waiters = [];
let firstReady;
export const workerReady = new Promise((resolve) => { firstReady = resolve; });

export const worker = () => current;

export function setWorker(w) {
  current = w;
  if (w) {
    waiters.forEach((resolve) => resolve(w));
    waiters = [];
    firstReady();
  }
}

// the running worker, once there is one (a call made during a restart waits for the new worker)
export const whenWorker = () => (current ? Promise.resolve(current) : new Promise((resolve) => waiters.push(resolve)));
