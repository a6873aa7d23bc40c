// Hyperparameter views on canvas: parallel coordinates and metric-vs-hyperparameter scatter plots.
import { el, fmtNum } from "./dom.js";

function axisOf(values) {
  const present = values.filter((v) => v !== undefined && v !== null);
  const numeric = present.length > 0 && present.every((v) => typeof v === "number" && Number.isFinite(v));
  if (numeric) {
    let lo = Math.min(...present), hi = Math.max(...present);
    const log = lo > 0 && hi / lo >= 100;
    const f = log ? Math.log10 : (v) => v;
    if (lo === hi) { lo -= 1; hi += 1; }
    const a = f(lo), b = f(hi);
    return { kind: log ? "log" : "linear", pos: (v) => (typeof v === "number" ? (f(v) - a) / (b - a || 1) : null),
      ticks: [lo, hi].map((v) => [(f(v) - a) / (b - a || 1), fmtNum(v)]) };
  }
  const cats = [...new Set(present.map((v) => (typeof v === "object" ? JSON.stringify(v) : String(v))))].sort();
  const key = (v) => (typeof v === "object" ? JSON.stringify(v) : String(v));
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

export function drawHparams(parBox, scatterBox, data) {
  const keys = data.hp_keys;
  const trials = data.trials;
  const vals = trials.map((t) => t.value).filter((v) => typeof v === "number");
  const lo = Math.min(...vals), hi = Math.max(...vals);
  const goodness = (v) => {
    if (typeof v !== "number" || !vals.length) return null;
    const t = hi === lo ? 1 : (v - lo) / (hi - lo);
    return data.smaller_is_better ? 1 - t : t;
  };
  const axes = keys.map((k) => ({ name: k, ...axisOf(trials.map((t) => t.hparams[k])) }));
  axes.push({ name: data.metric || "metric", ...axisOf(trials.map((t) => t.value)), metric: true });

  parBox.replaceChildren();
  parBox.dataset.trials = String(trials.length);
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
    const ax = axisOf(trials.map((t) => t.hparams[k]));
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
