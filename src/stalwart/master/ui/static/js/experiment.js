// The experiment page: summary and actions, learning curves of all trials, trials table, hyperparameters, config.
import { $, el, fmtDuration, fmtNum, fmtTime, labelChips, progressBar, readModel, setQuery, stateBadge } from "./dom.js";
import { confirmClick, flash, getF32Series, getJSON, post, showError } from "./api.js";
import { subscribe } from "./live.js";
import { renderPager, renderTable } from "./table.js";
import { LineChart } from "./chart.js";
import { drawHparams } from "./hparams.js";
import { jobOf } from "./jobs_api.js";

let model = readModel();
const expId = model.experiment.id;
const url = new URL(location.href);
let params = { sort: url.searchParams.get("sort") || model.sort, order: url.searchParams.get("order") || model.order,
  limit: model.limit, offset: model.offset };
let live = null;
let job = null;
const TERMINAL = new Set(["COMPLETED", "CANCELED", "ERROR"]);

// --- summary and actions -------------------------------------------------------------------------
function renderHead() {
  const e = model.experiment;
  document.title = `${e.name} · experiment ${e.id} · Stalwart`;
  $("#exp-name").textContent = e.name;
  $("#exp-state").replaceChildren(stateBadge(e.state));
  const s = model.searcher;
  const q = job || model.job_placeholder || {};
  const byState = Object.entries(s.trials_by_state).map(([k, v]) => `${v} ${k.toLowerCase()}`).join(", ") || "none yet";
  const facts = [
    ["ID", e.id], ["Owner", e.owner],
    ["Workspace", e.workspace_id ? el("a", { href: `/workspaces/${e.workspace_id}`, text: e.workspace_name }) : "—"],
    ["Project", e.project_id ? el("a", { href: `/projects/${e.project_id}`, text: e.project_name }) : "—"],
    ["Labels", labelChips(e.labels)], ["Description", e.description || "—"],
    ["Searcher", `${s.name} on ${s.metric} (${s.smaller_is_better ? "smaller" : "larger"} is better)`],
    ["Progress", progressBar(e.progress, e.state)],
    ["Best", e.best ? el("span", {}, fmtNum(e.best.value), " (", el("a", { href: `/trials/${e.best.trial_id}`, text: `trial ${e.best.trial_id}` }), ")")
      : model.index_ready ? "—" : "indexing…"],
    ["Trials", `${s.num_trials}${s.max_trials ? ` of ${s.max_trials}` : ""}: ${byState}`],
    ["Duration", fmtDuration(e.duration_s)], ["Started", fmtTime(e.created_at)], ["Ended", fmtTime(e.ended_at)],
    ["Queue position", q.queue_position !== undefined && q.queue_position !== null ? String(q.queue_position) : "—"],
    ["Priority", q.priority !== undefined && q.priority !== null ? String(q.priority) : "—"],
  ];
  if (e.error_message) facts.push(["Error", el("span", { class: "error-text", text: e.error_message })]);
  const warnings = e.warnings || [];
  $("#exp-warnings").replaceChildren(...warnings.map((w) => el("p", { class: "warning", text: `Warning: ${w}` })));
  $("#exp-warnings").hidden = warnings.length === 0;
  $("#facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { dataset: { fact: k } }, v)]));
  const st = e.state;
  const enable = { pause: st === "ACTIVE", activate: st === "PAUSED", kill: !TERMINAL.has(st), archive: TERMINAL.has(st) };
  const readOnly = e.can_edit === false;  // the master would refuse: edit_experiments is the owner's and admins'
  for (const b of document.querySelectorAll("#actions button")) {
    b.disabled = readOnly || !enable[b.dataset.action];
    b.title = readOnly ? `You may not change this experiment: ${whoMay(e)}` : "";
    if (b.dataset.action === "archive") b.textContent = e.archived ? "Unarchive" : "Archive";
  }
  const note = $("#actions-note");
  note.hidden = !readOnly;
  note.textContent = readOnly ? `Read only: this experiment belongs to ${e.owner}${where(e)}; ${whoMay(e)} (edit_experiments).` : "";
}

function where(e) { return e.workspace_name ? ` in workspace ${e.workspace_name}` : ""; }

// Why the user may not change it, in words (with roles, edit_experiments is granted per workspace).
function whoMay(e) { return e.workspace_name ? "you lack edit_experiments there" : "only its owner or an admin may change it"; }

async function act(action) {
  if (action === "archive" && model.experiment.archived) action = "unarchive";
  try {
    const res = await post(`/api/v1/experiments/${expId}/${action}`);
    if (res && res.experiment) { model.experiment = { ...model.experiment, ...res.experiment }; renderHead(); }
    flash(`${action}: done`, "info");
  } catch (err) { showError(err); }
}

for (const b of document.querySelectorAll("#actions button")) {
  if (b.dataset.action === "kill") confirmClick(b, () => act("kill"), "Really kill?");
  else b.addEventListener("click", () => act(b.dataset.action));
}

// --- learning curves ---------------------------------------------------------------------------
const chart = new LineChart($("#curves"), {
  height: 340,
  onZoom: (lo, hi) => { zoom = lo === null ? null : [lo, hi]; loadSeries(); },
  onPick: (trialId) => { location.href = `/trials/${trialId}`; },
});
let zoom = null;
let loading = false;
let pending = false;
let seenVersion = undefined;

let metricPicked = false;  // once the user picks a metric it stays; until then the chart follows the model's default

function defaultKey() {
  const d = model.default_metric || {};
  return `${d.group || "validation"}\u0000${d.metric || ""}`;
}

function metricOptions() {
  const sel = $("#metric");
  const current = metricPicked && sel.value ? sel.value : defaultKey();
  const opts = [];
  for (const [group, names] of Object.entries(model.metric_names || {})) {
    for (const n of names) opts.push([`${group}\u0000${n}`, `${group}: ${n}`]);
  }
  const [curGroup, curMetric] = current.split("\u0000");
  if (!opts.some(([v]) => v === current) && curMetric) opts.unshift([current, `${curGroup}: ${curMetric}`]);
  const signature = JSON.stringify(opts);
  if (sel.dataset.signature !== signature) {
    sel.replaceChildren(...opts.map(([v, label]) => el("option", { value: v, text: label })));
    sel.dataset.signature = signature;
  }
  if (sel.value !== current) sel.value = current;
  const epochs = $("#xaxis option[value=epochs]");
  epochs.disabled = !model.epochs_available;
  epochs.title = model.epochs_available ? "" : "needs records_per_epoch and a global_batch_size hyperparameter";
}

async function loadSeries() {
  if (loading) { pending = true; return; }
  loading = true;
  const [group, metric] = ($("#metric").value || "validation\u0000").split("\u0000");
  const x = $("#xaxis").value;
  const q = new URLSearchParams({ group, x, max_points: "1000", format: "f32" });
  if (metric) q.set("metric", metric);
  if (zoom) { q.set("x_min", zoom[0]); q.set("x_max", zoom[1]); }
  const isDefault = !zoom && x === "batches" && `${group}\u0000${metric || ""}` === defaultKey();
  try {
    const data = await getF32Series(isDefault ? model.series_url : `/api/v1/experiments/${expId}/metrics/series?${q}`);
    chart.update({
      x: data.x, time: x === "time", xLabel: x, keepZoom: !!zoom,
      series: data.trials.map((t) => ({ id: t.trial_id, label: `trial ${t.trial_id}`, values: t.y })),
    });
    const n = data.trials.length;
    $("#chart-note").textContent = n ? `${n} trial${n === 1 ? "" : "s"} · ${data.metric || ""} · up to ${data.max_points} points per trial (min and max kept)` : "";
  } catch (err) {
    if (err.status === 503) { $("#chart-note").textContent = err.message; setTimeout(loadSeries, 3000); } else showError(err);
  }
  loading = false;
  if (!live) connect();  // live updates start once the first chart is drawn: the page's first paint comes first
  if (pending) { pending = false; loadSeries(); }
}

$("#metric").addEventListener("change", () => { metricPicked = true; zoom = null; loadSeries(); });
$("#xaxis").addEventListener("change", () => { zoom = null; loadSeries(); });

// --- trials table ----------------------------------------------------------------------------------
function trialColumns() {
  const hp = model.hp_keys.slice(0, 10).map((k) => ({
    key: `hp.${k}`, label: k, sortable: true, numeric: true,
    render: (t) => { const v = t.hparams[k]; return v === undefined ? "—" : typeof v === "object" ? JSON.stringify(v) : fmtNum(v); },
  }));
  const metricCell = (key) => (t) => (t[key] ? el("span", { title: `at ${t[key].steps_completed} batches` }, fmtNum(t[key].value)) : "—");
  return [
    { key: "id", label: "Trial", sortable: true, numeric: true, render: (t) => el("a", { href: `/trials/${t.id}`, text: t.id }) },
    { key: "state", label: "State", sortable: true, render: (t) => stateBadge(t.state) },
    ...hp,
    { key: "best_validation", label: `Best ${model.searcher.metric || ""}`, sortable: true, numeric: true, render: metricCell("best_validation") },
    { key: "latest_validation", label: "Latest", sortable: true, numeric: true, render: metricCell("latest_validation") },
    { key: "steps_completed", label: "Batches", sortable: true, numeric: true, render: (t) => fmtNum(t.steps_completed) },
    { key: "restarts", label: "Restarts", sortable: true, numeric: true },
    { key: "duration", label: "Duration", sortable: true, numeric: true, render: (t) => fmtDuration(t.duration_s) },
  ];
}

function renderTrials() {
  renderTable($("#trials-table"), {
    id: "trials", columns: trialColumns(), rows: model.trials, sort: model.sort, order: model.order,
    onSort: (sort, order) => go({ sort, order, offset: 0 }), empty: "No trials yet.",
  });
  $("#trials-count").textContent = `(${model.trials_total})`;
  renderPager($("#pager"), { total: model.trials_total, offset: model.offset, limit: model.limit, onPage: (offset) => go({ offset }) });
}

async function go(change) {
  params = { ...params, ...change };
  setQuery({ sort: params.sort, order: params.order, offset: params.offset || "" });
  try { onModel(await getJSON(`/api/v1/ui/experiments/${expId}?${new URLSearchParams(params)}`)); } catch (err) { showError(err); }
  connect();
}

function connect() {
  if (live) live.close();
  live = subscribe({ page: "experiment", id: expId, ...params }, onModel);
}

function onModel(m) {
  model = m;
  renderHead();
  metricOptions();
  renderTrials();
  if (model.metrics_version !== seenVersion || model.metrics_version === null) {
    seenVersion = model.metrics_version;
    if (!zoom) loadSeries();
  }
  if (!$("[data-panel=hparams]").hidden) loadHparams();
}

// --- tabs, hyperparameters, config -----------------------------------------------------------------
let hpLoaded = 0;
async function loadHparams() {
  if (Date.now() - hpLoaded < 5000) return;
  hpLoaded = Date.now();
  try {
    const data = await getJSON(`/api/v1/ui/experiments/${expId}/hparams`);
    drawHparams($("#parcoords"), $("#scatters"), data, $("#hp-constants"));
    $("#hp-note").textContent = data.trials.length < 2 ? "The hyperparameter views are most useful with several trials." : `${data.trials.length} trials, colored by best ${data.metric}.`;
  } catch (err) { showError(err); }
}

function showTab(name) {
  for (const b of document.querySelectorAll("#tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
  for (const p of document.querySelectorAll("[data-panel]")) p.hidden = p.dataset.panel !== name;
  if (name === "hparams") { hpLoaded = 0; loadHparams(); }
  history.replaceState(null, "", `${location.pathname}${location.search}${name === "overview" ? "" : "#" + name}`);
}
for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
$("#config").textContent = model.config_yaml;

onModel(model);
setTimeout(() => jobOf("EXPERIMENT", expId).then((j) => { job = j; renderHead(); }).catch(() => {}), 500);
if (location.hash === "#hparams" || location.hash === "#config") showTab(location.hash.slice(1));
