// DOM building and formatting helpers. Text always goes in as text nodes, never as HTML.

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = String(v);
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];

export function replace(container, ...children) {
  container.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

export function readModel() {
  const node = document.getElementById("model");
  return node ? JSON.parse(node.textContent) : null;
}

export function fmtNum(v) {
  if (v === null || v === undefined || v === "") return "—";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return v.toLocaleString("en-US");
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(5)));
}

export function fmtDuration(s) {
  if (s === null || s === undefined) return "—";
  s = Math.round(s);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function fmtTime(ts) {
  if (!ts) return "—";
  const d = new Date(ts * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

export function stateBadge(state) {
  return el("span", { class: `state state-${String(state || "").toLowerCase()}`, text: state || "—" });
}

const ENDED_EARLY = new Set(["ERROR", "CANCELED", "STOPPING_ERROR", "STOPPING_CANCELED", "STOPPING_KILLED"]);

// `state`: an experiment that ended early shows how far it got, in the state's colour, and says so.
export function progressBar(p, state = null) {
  const pct = Math.round(Math.max(0, Math.min(1, p || 0)) * 100);
  const early = ENDED_EARLY.has(state);
  const ended = early ? String(state).replace("STOPPING_", "").toLowerCase() : "";
  const text = early ? `${pct}% (${ended === "error" ? "failed" : "canceled"})` : `${pct}%`;
  return el("span", { class: `progress${early ? ` ended-${ended}` : ""}`, title: early ? `${pct}% of the search was done when it ended in ${state}` : `${pct}%` },
    el("span", { class: "track" }, el("span", { class: "bar", style: `width:${pct}%` })), el("span", { class: "pct", text }));
}

export function labelChips(labels) {
  return el("span", { class: "labels" }, (labels || []).map((l) => el("span", { class: "chip", text: l })));
}

export function setQuery(params) {
  const u = new URL(location.href);
  for (const [k, v] of Object.entries(params)) {
    if (v === "" || v === null || v === undefined) u.searchParams.delete(k); else u.searchParams.set(k, v);
  }
  history.replaceState(null, "", u);
}
