// Commands and other tasks, finished ones too (how they ended, exit code), with their logs and, while one
// serves, a link to its server through the master's proxy; a clear notice while the master has no task API.
import { $, el, fmtTime, stateBadge } from "./dom.js";
import { getJSON, showError } from "./api.js";
import { renderTable } from "./table.js";
import { LogViewer } from "./logs.js";

const box = $("#tasks");
const taskId = document.querySelector("h1").dataset.task;
const KINDS = ["command", "notebook", "tensorboard", "shell"];
let kind = KINDS.find((k) => k === new URLSearchParams(location.search).get("kind")) || "";  // ?kind=notebook
let tasks = [];

async function loadTasks() {
  try {
    const data = await getJSON("/api/v1/tasks?all=true");
    tasks = data.tasks || [];
    box.dataset.state = "ready";
    return true;
  } catch (err) {
    if (err.status === 404 || err.status === 405) {
      box.dataset.state = "unavailable";
      box.replaceChildren(el("p", { class: "unavailable", text: "Commands and tasks are not available on this master yet (GET /api/v1/tasks answered 404)." }));
      return false;
    }
    showError(err);
    return false;
  }
}

// Only the tasks of one kind (or all), kept in the address as ?kind=... so that a view can be linked to.
function kindFilter() {
  const select = el("select", { id: "task-kind", name: "kind", "aria-label": "Kind", onchange: () => {
    kind = select.value;
    const url = new URL(location.href);
    if (kind) url.searchParams.set("kind", kind); else url.searchParams.delete("kind");
    history.replaceState(null, "", url);
    renderList();
  } }, el("option", { value: "", text: "All kinds" }),
  KINDS.map((k) => el("option", { value: k, text: `${k}s`, selected: k === kind })));
  return el("label", { class: "task-filter" }, "Show ", select);
}

function renderList() {
  renderTable(box, {
    id: "tasks-table", rowKey: (t) => t.id, empty: kind ? `No ${kind}s.` : "No commands or tasks.",
    columns: [
      { key: "id", label: "ID", render: (t) => el("a", { href: `/tasks/${encodeURIComponent(t.id)}`, text: t.id }) },
      { key: "kind", label: "Kind" }, { key: "description", label: "Description" }, { key: "state", label: "State" },
      { key: "owner", label: "Owner" }, { key: "resource_pool", label: "Pool" },
      { key: "result", label: "Result", render: (t) => (t.result ? stateBadge(t.result) : "—") },
      { key: "end_reason", label: "Ended because", render: (t) => t.end_reason || "—" },
      { key: "exit_code", label: "Exit code", render: (t) => (t.exit_code === null || t.exit_code === undefined ? "—" : String(t.exit_code)) },
      { key: "created_at", label: "Started", render: (t) => fmtTime(t.created_at) },
      { key: "ended_at", label: "Ended", render: (t) => fmtTime(t.ended_at) },
      // a task's server, through the master's proxy (its owner alone may open it: docs/tasks.md)
      { key: "proxy_path", label: "Service", render: (t) => (t.proxy_path ? el("a", { href: t.proxy_path, target: "_blank", rel: "noopener", text: "Open" }) : "—") },
    ],
    rows: tasks.filter((t) => !kind || t.kind === kind).reverse(),  // newest first
  });
}

async function main() {
  if (!(await loadTasks())) return;
  if (!taskId) box.before(kindFilter());
  renderList();
  if (!taskId) { setInterval(async () => { if (await loadTasks()) renderList(); }, 3000); return; }
  const task = tasks.find((t) => String(t.id) === taskId);
  const panel = $("#logs-panel");
  panel.hidden = false;
  const base = `/api/v1/tasks/${encodeURIComponent(taskId)}/logs`;
  new LogViewer(panel, {
    load: async () => ({ logs: [], last_id: 0, truncated: false }),
    followUrl: (afterId) => `${base}?follow=true&after_id=${afterId}`,
    live: () => !task || !["COMPLETED", "CANCELED", "ERROR", "TERMINATED"].includes(task.state),
  }).reload();
}

main();
