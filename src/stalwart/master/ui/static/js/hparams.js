// Hyperparameter views on canvas: parallel coordinates and metric-vs-hyperparameter scatter plots.
// Axes follow the config: int/double/log hyperparameters span their search range (log ones on a log scale),
// categorical ones their values in config order; constants get no axis (they are listed apart).
import { el, fmtNum } from "./dom.js";

const RANGED = new Set(["int", "double", "log"]);

function logTicks(lo, hi, base, f, a, b) {
  const ticks = [[0, fmtNum(lo)], [1, fmtNum(hi)]];
  const k0 = Math.ceil(Math.log(lo) / Math.log(base) - 1e-9), k1 = Math.floor(Math.log(hi) / Math.log(base) + 1e-9);
  if (k1 - k0 <= 6) {
    for (let k = k0; k <= k1; k++) {
      const v = base ** k, p = (f(v) - a) / (b - a);
      if (p > 0.08 && p < 0.92) ticks.push([p, fmtNum(Number(v.toPrecision(3)))]);
    }
  }
  return ticks;
}

// An axis for `values`; `spec` is the hyperparameter's config ({kind, low, high, base} or {kind, vals}).
function axisOf(values, spec = null) {
  const present = values.filter((v) => v !== undefined && v !== null);
  const numeric = present.length > 0 && present.every((v) => typeof v === "number" && Number.isFinite(v));
  const ranged = spec && RANGED.has(spec.kind);
  if (present.length === 0 && !spec) return { kind: "linear", pos: () => null, ticks: [] };  // a metric not reported yet
  if ((numeric && !(spec && spec.kind === "categorical")) || (ranged && present.length === 0)) {
    let lo = ranged ? Math.min(spec.low, ...present) : Math.min(...present);
    let hi = ranged ? Math.max(spec.high, ...present) : Math.max(...present);
    const log = ranged && spec.kind === "log" && lo > 0;
    const base = log ? spec.base || 10 : 10;
    const f = log ? Math.log : (v) => v;
    if (lo === hi) { const pad = Math.abs(lo) * 0.05 || 1; lo -= pad; hi += pad; }  // only a metric with one value
    const a = f(lo), b = f(hi);
    const pos = (v) => (typeof v === "number" && (!log || v > 0) ? (f(v) - a) / (b - a || 1) : null);
    const ticks = log ? logTicks(lo, hi, base, f, a, b) : [[0, fmtNum(lo)], [1, fmtNum(hi)]];
    return { kind: log ? "log" : "linear", pos, ticks };
  }
  const key = (v) => (typeof v === "object" ? JSON.stringify(v) : String(v));
  const order = spec && spec.kind === "categorical" ? spec.vals.map(key) : [];
  const cats = [...new Set([...order, ...present.map(key).sort()])];
  const step = cats.length > 1 ? 1 / (cats.length - 1) : 0.5;
  return { kind: "category", pos: (v) => (v === undefined || v === null ? null : cats.indexOf(key(v)) * step + (cats.length > 1 ? 0 : 0.5)),
    ticks: cats.slice(0, 12).map((c, i) => [i * step + (cats.length > 1 ? 0 : 0.5), c.length > 14 ? c.slice(0, 13) + "…" : c]) };
}

function metricColor(t) {
  // t in 0..1, 1 = best: light grey-blue to saturated dark red
  const hue = 220 - 220 * t;
  return `hsla(${hue}, 70%, ${55 - 15 * t}%, ${0.35 + 0.6 * t})`;
}

function canvas(container, width, height) {
  const ratio = window.devicePixelRatio || 1;
  const c = el("canvas", { width: Math.round(width * ratio), height: Math.round(height * ratio), style: `width:${width}px;height:${height}px` });
  const ctx = c.getContext("2d");
  ctx.scale(ratio, ratio);
  ctx.font = "11px system-ui, sans-serif";
  container.append(c);
  return ctx;
}

function listConstants(box, constants) {
  const entries = Object.entries(constants || {});
  box.hidden = entries.length === 0;
  box.replaceChildren(el("h2", { text: "Constants" }), el("p", { class: "note", text: "The same in every trial, so they get no axis." }),
    el("dl", { class: "facts" }, entries.flatMap(([k, v]) => [el("dt", { text: k }),
      el("dd", { dataset: { constant: k } }, typeof v === "object" && v !== null ? JSON.stringify(v) : fmtNum(v))])));
}

export function drawHparams(parBox, scatterBox, data, constBox = null) {
  const keys = data.hp_keys;
  const specs = data.hp_specs || {};
  const trials = data.trials;
  if (constBox) listConstants(constBox, data.constants);
  const vals = trials.map((t) => t.value).filter((v) => typeof v === "number");
  const lo = Math.min(...vals), hi = Math.max(...vals);
  const goodness = (v) => {
    if (typeof v !== "number" || !vals.length) return null;
    const t = hi === lo ? 1 : (v - lo) / (hi - lo);
    return data.smaller_is_better ? 1 - t : t;
  };
  const axes = keys.map((k) => ({ name: k, ...axisOf(trials.map((t) => t.hparams[k]), specs[k]) }));
  axes.push({ name: data.metric || "metric", ...axisOf(trials.map((t) => t.value)), metric: true });

  parBox.replaceChildren();
  parBox.dataset.trials = String(trials.length);
  parBox.dataset.axes = JSON.stringify(axes.map((a) => [a.name, a.kind]));
  const width = Math.max(400, parBox.clientWidth || 800), height = 300, top = 24, bottom = 40, left = 50, right = 50;
  const ctx = canvas(parBox, width, height);
  const xAt = (i) => left + (axes.length > 1 ? (i * (width - left - right)) / (axes.length - 1) : (width - left - right) / 2);
  const yAt = (p) => top + (1 - p) * (height - top - bottom);
  const order = trials.map((t, i) => [goodness(t.value) ?? -1, i]).sort((a, b) => a[0] - b[0]);
  for (const [g, i] of order) {
    const t = trials[i];
    ctx.strokeStyle = g < 0 ? "rgba(150,150,150,0.35)" : metricColor(g);
    ctx.lineWidth = g > 0.95 ? 2 : 1;
    ctx.beginPath();
    let started = false;
    axes.forEach((a, j) => {
      const p = a.pos(a.metric ? t.value : t.hparams[a.name]);
      if (p === null || Number.isNaN(p)) { started = false; return; }
      if (!started) { ctx.moveTo(xAt(j), yAt(p)); started = true; } else ctx.lineTo(xAt(j), yAt(p));
    });
    ctx.stroke();
  }
  ctx.fillStyle = "#222";
  ctx.strokeStyle = "#444";
  ctx.lineWidth = 1;
  axes.forEach((a, j) => {
    const x = xAt(j);
    ctx.beginPath(); ctx.moveTo(x, yAt(0)); ctx.lineTo(x, yAt(1)); ctx.stroke();
    ctx.textAlign = "center";
    ctx.fillText(a.name.length > 18 ? a.name.slice(0, 17) + "…" : a.name, x, height - bottom + 28);
    ctx.textAlign = j === axes.length - 1 ? "right" : "left";
    for (const [p, label] of a.ticks) ctx.fillText(label, x + (j === axes.length - 1 ? -4 : 4), yAt(p) + 4);
  });

  scatterBox.replaceChildren();
  for (const k of keys) {
    const box = el("figure", { class: "scatter" }, el("figcaption", { text: `${data.metric || "metric"} vs ${k}` }));
    scatterBox.append(box);
    const w = 280, h = 200, pad = 56;
    const sctx = canvas(box, w, h);
    const ax = axisOf(trials.map((t) => t.hparams[k]), specs[k]);
    box.dataset.hparam = k;
    box.dataset.scale = ax.kind;
    const ay = axisOf(trials.map((t) => t.value));
    sctx.strokeStyle = "#999";
    sctx.strokeRect(pad, 8, w - pad - 8, h - pad - 8);
    for (const t of trials) {
      const px = ax.pos(t.hparams[k]), py = ay.pos(t.value);
      if (px === null || py === null) continue;
      const g = goodness(t.value);
      sctx.fillStyle = g === null ? "#999" : metricColor(g);
      sctx.beginPath();
      sctx.arc(pad + px * (w - pad - 8), 8 + (1 - py) * (h - pad - 8), 3.5, 0, 2 * Math.PI);
      sctx.fill();
    }
    sctx.fillStyle = "#333";
    sctx.textAlign = "center";
    for (const [p, label] of ax.ticks) sctx.fillText(label, pad + p * (w - pad - 8), h - pad + 14);
    sctx.textAlign = "right";
    for (const [p, label] of ay.ticks) sctx.fillText(label, pad - 3, 8 + (1 - p) * (h - pad - 8) + 4);
  }
}
