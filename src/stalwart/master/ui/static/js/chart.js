// Line charts on uPlot (vendored): many series, drag to zoom, a hover readout, readiness marks for tests.
import uPlot from "../vendor/uplot-1.6.32/uPlot.esm.js";
import { el, fmtNum } from "./dom.js";

export function color(i, alpha = 1) {
  const hue = (i * 137.508 + 210) % 360;
  return `hsla(${hue.toFixed(1)}, 65%, 45%, ${alpha})`;
}

export class LineChart {
  // onZoom(min, max) after a drag (null, null after a double-click reset); onPick(seriesId) on click.
  constructor(container, { height = 300, onZoom = null, onPick = null } = {}) {
    this.box = container;
    this.height = height;
    this.onZoom = onZoom;
    this.onPick = onPick;
    this.plot = null;
    this.signature = "";
    this.ids = [];
    this.hover = null;
    this.readout = el("div", { class: "readout" });
    this.empty = el("div", { class: "chart-empty", text: "No data yet." });
    this.canvasBox = el("div", { class: "plot" });
    container.replaceChildren(this.canvasBox, this.readout, this.empty);
    this.resizer = new ResizeObserver(() => {
      if (this.plot) this.plot.setSize({ width: this.width(), height: this.height });
    });
    this.resizer.observe(container);
  }

  width() { return Math.max(200, this.box.clientWidth || 600); }

  update({ x, series, time = false, xLabel = "", keepZoom = false }) {
    const t0 = performance.now();
    const many = series.length > 12;
    const signature = JSON.stringify([time, xLabel, series.map((s) => s.label)]);
    const data = [x, ...series.map((s) => s.values)];
    this.ids = series.map((s) => s.id);
    let points = 0;
    for (const s of series) for (const v of s.values) if (v !== null && v !== undefined) points++;
    this.empty.hidden = points > 0;
    if (!this.plot || signature !== this.signature) {
      if (this.plot) this.plot.destroy();
      this.signature = signature;
      this.plot = new uPlot(this.options(series, time, xLabel, many), data, this.canvasBox);
      this.plot.over.addEventListener("dblclick", () => { if (this.onZoom) this.onZoom(null, null); });
      this.plot.over.addEventListener("click", () => { if (this.onPick && this.hover !== null) this.onPick(this.hover); });
    } else {
      this.plot.__drawn = false;
      this.plot.setData(data, !keepZoom);
    }
    this.pending = { points, series: series.length, t0, xLabel };
    this.markDrawn();
  }

  // Marks the box once uPlot has really drawn (its draw hook), for tests and the benchmark.
  markDrawn() {
    if (!this.pending || !this.plot || !this.plot.__drawn) return;
    const { points, series, t0, xLabel } = this.pending;
    this.pending = null;
    this.box.dataset.points = String(points);
    this.box.dataset.series = String(series);
    this.box.dataset.drawn = "1";
    this.box.dataset.xaxis = xLabel;
    this.box.dataset.drawMs = String(Math.round(performance.now() - t0));
  }

  options(series, time, xLabel, many) {
    const self = this;
    return {
      width: this.width(),
      height: this.height,
      scales: { x: { time } },
      legend: { show: !many },
      cursor: { drag: { x: true, y: false, setScale: true }, points: { show: !many }, focus: { prox: 16 } },
      focus: { alpha: many ? 1 : 0.3 },
      axes: [{ label: xLabel, stroke: "#555", grid: { stroke: "#eee" } }, { stroke: "#555", grid: { stroke: "#eee" }, size: 60 }],
      series: [
        { label: xLabel || "x", value: (u, v) => (v === null || v === undefined ? "—" : time ? new Date(v * 1000).toLocaleString() : fmtNum(v)) },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: s.color || color(i, many ? 0.55 : 1),
          width: many ? 1 : 1.5,
          spanGaps: true,
          // a line needs two points: a series with only a few (one validation, ASHA's first rung) gets markers
          points: { show: (u, si, i0, i1) => fewPoints(u.data[si], i0, i1), size: many ? 5 : 7, fill: s.color || color(i, many ? 0.55 : 1) },
          value: (u, v) => fmtNum(v),
        })),
      ],
      hooks: {
        setSelect: [(u) => {
          if (!self.onZoom || u.select.width < 2) return;
          const lo = u.posToVal(u.select.left, "x");
          const hi = u.posToVal(u.select.left + u.select.width, "x");
          setTimeout(() => self.onZoom(lo, hi), 0);
        }],
        setCursor: [(u) => self.readoutAt(u)],
        draw: [(u) => { u.__drawn = true; self.markDrawn(); }],
      },
    };
  }

  readoutAt(u) {
    const idx = u.cursor.idx;
    if (idx === null || idx === undefined || u.cursor.left < 0) { this.readout.textContent = ""; this.hover = null; return; }
    let best = null;
    let bestDist = 12;
    for (let s = 1; s < u.series.length; s++) {
      const v = nearestValue(u.data[s], idx);
      if (v === null) continue;
      const d = Math.abs(u.valToPos(v, "y") - u.cursor.top);
      if (d < bestDist) { bestDist = d; best = s; }
    }
    this.hover = best === null ? null : this.ids[best - 1];
    if (best === null) { this.readout.textContent = ""; return; }
    const xv = u.data[0][idx];
    const xs = u.scales.x.time ? new Date(xv * 1000).toLocaleString() : fmtNum(xv);
    this.readout.textContent = `${u.series[best].label}: ${fmtNum(nearestValue(u.data[best], idx))} at ${xs}`;
  }

  destroy() {
    this.resizer.disconnect();
    if (this.plot) this.plot.destroy();
  }
}

const FEW = 3;  // series with at most this many points in view are drawn with markers

function fewPoints(values, i0, i1) {
  let n = 0;
  for (let i = i0; i <= i1; i++) if (values[i] !== null && values[i] !== undefined && ++n > FEW) return false;
  return true;
}

function nearestValue(values, idx) {
  for (let d = 0; d < 3; d++) {
    if (values[idx - d] !== null && values[idx - d] !== undefined) return values[idx - d];
    if (values[idx + d] !== null && values[idx + d] !== undefined) return values[idx + d];
  }
  return null;
}
