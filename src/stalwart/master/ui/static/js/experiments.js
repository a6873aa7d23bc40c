// The experiments list (also a project's page, with `project` fixed): server-side filter, sort and paging, live
// over SSE, bulk pause/activate/kill/archive (the master refuses, naming the permission, what the user may not).
import { $, el, fmtDuration, fmtNum, fmtTime, labelChips, progressBar, readModel, setQuery, stateBadge } from "./dom.js";
import { flash, getJSON, post, showError } from "./api.js";
import { subscribe } from "./live.js";
import { renderPager, renderTable } from "./table.js";

let model = readModel();
const project = model.project || null;  // on a project's page: its experiments only
let params = { ...model.filters, sort: model.sort, order: model.order, limit: model.limit, offset: model.offset };
const selected = new Set();
let live = null;

const columns = [
  { key: "id", label: "ID", sortable: true, numeric: true, render: (e) => el("a", { href: `/experiments/${e.id}`, text: e.id }) },
  { key: "name", label: "Name", sortable: true, class: "name-col", render: (e) => nameLink(e) },
  { key: "state", label: "State", sortable: true, render: (e) => stateBadge(e.state) },
  { key: "progress", label: "Progress", sortable: true, numeric: true, class: "wrap", render: (e) => progressBar(e.progress, e.state) },
  { key: "best", label: "Best metric", sortable: true, numeric: true, class: "wrap", title: "Best validation of the searcher metric",
    render: (e) => (e.best ? el("span", { title: `${e.metric} (trial ${e.best.trial_id})` }, fmtNum(e.best.value), el("small", { text: ` ${e.metric}` }))
      : model.index_ready ? "—" : el("span", { class: "note", text: "indexing…" })) },
  { key: "num_trials", label: "Trials", sortable: true, numeric: true },
  { key: "duration", label: "Duration", sortable: true, numeric: true, render: (e) => fmtDuration(e.duration_s) },
  { key: "labels", label: "Labels", class: "wrap", render: (e) => labelChips(e.labels) },
  { key: "owner", label: "Owner", sortable: true, render: (e) => e.owner },
  ...(project ? [] : [{ key: "project", label: "Workspace / project", class: "wrap", render: (e) => place(e) }]),
  { key: "created_at", label: "Started", sortable: true, numeric: true, class: "wrap", render: (e) => stamp(e.created_at) },
  { key: "ended_at", label: "Ended", sortable: true, numeric: true, class: "wrap", render: (e) => stamp(e.ended_at) },
];

// A time as its date and its clock, each kept whole: in a narrow column the clock goes under the date.
function stamp(ts) {
  if (!ts) return "—";
  const [day, clock] = fmtTime(ts).split(" ");
  return el("span", { class: "stamp" }, el("span", { class: "nowrap", text: day }), " ", el("span", { class: "nowrap", text: clock }));
}

// The name, breakable after _ - . / : as well as at spaces (a long run_name_like_this wraps between its words,
// never inside one); the whole name is its title, for one cut short with an ellipsis.
function nameLink(e) {
  const parts = String(e.name).split(/(?<=[_\-./:])/);
  return el("a", { href: `/experiments/${e.id}`, class: "name", title: e.name },
    parts.flatMap((p, i) => (i < parts.length - 1 ? [p, el("wbr")] : [p])));
}

function place(e) {
  if (!e.project_id) return "—";
  return el("span", { class: "place" }, el("a", { href: `/workspaces/${e.workspace_id}`, text: e.workspace_name }), " / ",
    el("a", { href: `/projects/${e.project_id}`, text: e.project_name }));
}

function render() {
  const visible = new Set(model.experiments.map((e) => e.id));
  for (const id of [...selected]) if (!visible.has(id)) selected.delete(id);
  renderTable($("#experiments-table"), {
    id: "experiments", columns, rows: model.experiments, sort: model.sort, order: model.order, selected,
    onSelect: renderBulk, onSort: (sort, order) => go({ sort, order, offset: 0 }),
    empty: project ? "No experiments in this project match."
      : "No experiments match. Create one with: stalwart experiment create CONFIG CONTEXT_DIR",
  });
  renderPager($("#pager"), { total: model.total, offset: model.offset, limit: model.limit, onPage: (offset) => go({ offset }) });
  renderBulk();
}

function renderBulk() {
  $("#selected-count").textContent = `${selected.size} selected`;
  for (const b of document.querySelectorAll("#bulk button")) b.disabled = selected.size === 0;
}

function connect() {
  if (live) live.close();
  live = subscribe({ page: "experiments", ...clean(params) }, (m) => { model = m; render(); });
}

function clean(p) {
  return Object.fromEntries(Object.entries(p).filter(([, v]) => v !== "" && v !== null && v !== undefined));
}

async function go(change) {
  params = { ...params, ...change };
  const { project: _fixed, ...shown } = clean(params);  // a project's page has it in its path
  setQuery(project ? shown : clean(params));
  try {
    model = await getJSON("/api/v1/ui/experiments?" + new URLSearchParams(clean(params)));
    render();
  } catch (err) { showError(err); }
  connect();
}

function setupFilters() {
  const form = $("#filters");
  const stateSel = form.elements.state;
  for (const s of model.states) stateSel.append(el("option", { value: s, text: s }));
  for (const k of ["q", "state", "label", "owner", "archived"]) form.elements[k].value = model.filters[k] || (k === "archived" ? "false" : "");
  let timer = null;
  const apply = () => go({ q: form.elements.q.value.trim(), state: form.elements.state.value, label: form.elements.label.value.trim(),
    owner: form.elements.owner.value.trim(), archived: form.elements.archived.value, offset: 0 });
  form.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(apply, 250); });
  form.addEventListener("submit", (ev) => { ev.preventDefault(); apply(); });
}

async function bulk(action) {
  const ids = [...selected];
  const failures = [];
  for (const id of ids) {
    try { await post(`/api/v1/experiments/${id}/${action}`); } catch (err) { failures.push(`experiment ${id}: ${err.message}`); }
  }
  const done = ids.length - failures.length;
  if (failures.length) flash(`${action}: ${done} of ${ids.length} done; ${failures.length} failed`, "error", failures);
  else flash(`${action}: done for ${ids.length} experiment${ids.length === 1 ? "" : "s"}`, "info");
  selected.clear();
  go({});
}

function setupBulk() {
  for (const b of document.querySelectorAll("#bulk button")) {
    const action = b.dataset.action;
    if (action === "kill") {
      let armed = null;
      b.addEventListener("click", () => {
        if (!armed) {
          b.textContent = `Kill ${selected.size}? Click again`;
          armed = setTimeout(() => { armed = null; b.textContent = "Kill"; }, 4000);
          return;
        }
        clearTimeout(armed); armed = null; b.textContent = "Kill";
        bulk("kill");
      });
    } else {
      b.addEventListener("click", () => bulk(action));
    }
  }
}

setupFilters();
setupBulk();
render();
connect();
