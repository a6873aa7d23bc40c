// The trial page: summary, hyperparameters, restart history, metric charts, checkpoints and live logs.
import { $, el, fmtBytes, fmtDuration, fmtNum, fmtTime, readModel, stateBadge } from "./dom.js";
import { getJSON, showError } from "./api.js";
import { subscribe } from "./live.js";
import { renderTable } from "./table.js";
import { LineChart } from "./chart.js";
import { LogViewer } from "./logs.js";

let model = readModel();
const trialId = model.trial.id;
const TERMINAL = new Set(["COMPLETED", "CANCELED", "ERROR"]);
let seenVersion;

function renderHead() {
  const t = model.trial;
  const link = $("#exp-link");
  link.href = `/experiments/${model.experiment.id}`;
  link.textContent = `${model.experiment.name} (experiment ${model.experiment.id})`;
  $("#trial-state").replaceChildren(stateBadge(t.state));
  const metric = model.experiment.metric;
  const val = (v) => (v ? `${fmtNum(v.value)} at ${fmtNum(v.steps_completed)} batches` : "—");
  const facts = [
    ["Batches", fmtNum(t.steps_completed)], [`Best ${metric || ""}`, val(t.best_validation)], ["Latest", val(t.latest_validation)],
    ["Restarts", `${t.restarts} (runs: ${t.runs})`], ["Progress", `${Math.round((t.progress || 0) * 100)}%`],
    ["Duration", fmtDuration(t.duration_s)], ["Started", fmtTime(t.created_at)], ["Ended", fmtTime(t.ended_at)],
  ];
  if (t.early_exit) facts.push(["Early exit", t.early_exit]);
  if (t.log_policy_matched) facts.push(["Log policy matched", el("span", { class: "error-text", text: t.log_policy_matched })]);
  if (t.error_message) facts.push(["Error", el("span", { class: "error-text", text: t.error_message })]);
  $("#facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)]));
  renderTable($("#hparams"), {
    id: "hparams-table", rowKey: (r) => r.name,
    columns: [{ key: "name", label: "Name" }, { key: "value", label: "Value", render: (r) => (typeof r.value === "object" ? JSON.stringify(r.value) : String(r.value)) }],
    rows: Object.entries(t.hparams_flat).map(([name, value]) => ({ name, value })),
  });
  renderTable($("#runs"), {
    id: "runs-table", rowKey: (r) => r.id, empty: "Not started yet.",
    columns: [
      { key: "number", label: "Run", numeric: true },
      { key: "agent_id", label: "Agent" },
      { key: "state", label: "State" },
      { key: "started_at", label: "Started", render: (r) => fmtTime(r.started_at) },
      { key: "ended_at", label: "Ended", render: (r) => fmtTime(r.ended_at) },
      { key: "exit_code", label: "Exit code", numeric: true },
      { key: "exit_reason", label: "Reason", render: (r) => el("span", { class: r.failure ? "error-text" : "" }, r.exit_reason || (r.state === "TERMINATED" ? "—" : "running"), r.failure ? " (a failure, counted against max_restarts)" : "") },
    ],
    rows: model.runs,
  });
  renderTable($("#checkpoints"), {
    id: "checkpoints-table", rowKey: (c) => c.uuid, empty: "No checkpoints yet.",
    columns: [
      { key: "uuid", label: "UUID", render: (c) => el("code", { title: c.uuid, text: c.uuid }) },
      { key: "steps_completed", label: "Batches", numeric: true, render: (c) => fmtNum(c.steps_completed) },
      { key: "state", label: "State" },
      { key: "size_bytes", label: "Size", numeric: true, render: (c) => fmtBytes(c.size_bytes) },
      { key: "validation_metrics", label: "Validation metrics", render: (c) => (c.validation_metrics
        ? Object.entries(c.validation_metrics).map(([k, v]) => `${k}=${fmtNum(v)}`).join(", ") : "—") },
      { key: "report_time", label: "Saved", render: (c) => fmtTime(c.report_time) },
      { key: "download", label: "", render: (c) => (c.state === "COMPLETED"
        ? el("a", { href: `/api/v1/checkpoints/${encodeURIComponent(c.uuid)}/download`, download: `checkpoint-${c.uuid}.tgz`, text: "Download" }) : "—") },
    ],
    rows: model.checkpoints,
  });
}

// --- charts -------------------------------------------------------------------------------------
const charts = {};
const zooms = { training: null, validation: null };
const busy = {};

function setupChart(group) {
  charts[group] = new LineChart($(`#chart-${group}`), { height: 280, onZoom: (lo, hi) => { zooms[group] = lo === null ? null : [lo, hi]; load(group); } });
  $(`#metric-${group}`).addEventListener("change", () => { picked[group] = true; zooms[group] = null; load(group); });
}

const picked = { training: false, validation: false };  // until the user picks, each chart shows the model's default

function metricOptions() {
  for (const group of ["training", "validation"]) {
    const sel = $(`#metric-${group}`);
    const names = (model.metric_names || {})[group] || [];
    const signature = names.join("\u0000");
    if (sel.dataset.signature === signature) continue;
    const current = picked[group] && sel.value ? sel.value : (model.default_metrics || {})[group];
    sel.replaceChildren(...names.map((n) => el("option", { value: n, text: n })));
    sel.dataset.signature = signature;
    if (current) sel.value = current;
  }
  const epochs = $("#xaxis option[value=epochs]");
  epochs.disabled = !model.epochs_available;
}

let firstLoads = 0;

async function load(group) {
  if (busy[group]) { busy[group] = "again"; return; }
  busy[group] = true;
  const metric = $(`#metric-${group}`).value;
  const x = $("#xaxis").value;
  const chart = charts[group];
  const q = new URLSearchParams({ group, x, max_points: "4000" });
  if (metric) q.set("metric", metric);
  if (zooms[group]) { q.set("x_min", zooms[group][0]); q.set("x_max", zooms[group][1]); }
  const preloaded = model.series_urls[group];
  const isDefault = preloaded && !zooms[group] && x === "batches" && preloaded.endsWith(`&metric=${encodeURIComponent(metric).replace(/%20/g, "+")}`);
  try {
    const d = await getJSON(isDefault ? preloaded : `/api/v1/trials/${trialId}/metrics/series?${q}`);
    chart.update({ x: d.x, time: x === "time", xLabel: x, keepZoom: !!zooms[group], series: [{ id: trialId, label: d.metric || group, values: d.y }] });
    $(`[data-note=${group}]`).textContent = d.raw_points ? `${d.points.toLocaleString("en-US")} of ${d.raw_points.toLocaleString("en-US")} points` : "";
  } catch (err) { showError(err); }
  const again = busy[group] === "again";
  busy[group] = false;
  if (++firstLoads === 2) startLive();  // logs and live updates once both charts are drawn
  if (again) load(group);
}

$("#xaxis").addEventListener("change", () => { zooms.training = zooms.validation = null; load("training"); load("validation"); });

function onModel(m) {
  model = m;
  renderHead();
  metricOptions();
  if (model.metrics_version !== seenVersion || model.metrics_version === null) {
    seenVersion = model.metrics_version;
    if (!zooms.training) load("training");
    if (!zooms.validation) load("validation");
  }
}

setupChart("training");
setupChart("validation");
const logs = new LogViewer($("#logs-panel"), {
  load: ({ level, q }) => getJSON(`/api/v1/ui/trials/${trialId}/logs?${new URLSearchParams({ tail: "1000", level, q })}`),
  followUrl: (afterId) => `/api/v1/trials/${trialId}/logs?follow=true&after_id=${afterId}`,
  live: () => !TERMINAL.has(model.trial.state),
});
let started = false;
function startLive() {
  if (started) return;
  started = true;
  logs.reload();
  subscribe({ page: "trial", id: trialId }, onModel);
}
onModel(model);
setTimeout(startLive, 1500);
