// The page as every module of the bridge finds it: its root element, whose data-state
// ("loading" | "ready" | "error") is the readiness hook for tests and embeds; whether it is the embed
// page (<html data-mode="embed">: the same modules serve index.html and embed.html, and the embed has
// no form, no editor and no print); and $, getElementById.
//
// State: none.

export const root = document.documentElement;
export const EMBED = root.dataset.mode === "embed";
export const $ = (id) => document.getElementById(id);
