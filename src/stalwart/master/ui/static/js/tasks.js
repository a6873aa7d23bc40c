// Commands and other tasks, finished ones too (how they ended, exit code), with their logs and, while one
// serves, a link to its server through the master's proxy; a clear notice while the master has no task API.
import { $, el, fmtTime, stateBadge } from "./dom.js";
import { getJSON, showError } from "./api.js";
import { renderTable } from "./table.js";
import { LogViewer } from "./logs.js";

const box = $("#tasks");
const taskId = document.querySelector("h1").dataset.task;
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

function renderList() {
  renderTable(box, {
    id: "tasks-table", rowKey: (t) => t.id, empty: "No commands or tasks.",
    columns: [
      { key: "id", label: "ID", render: (t) => el("a", { href: `/tasks/${encodeURIComponent(t.id)}`, text: t.id }) },
      { key: "kind", label: "Kind" }, { key: "description", label: "Description" }, { key: "state", label: "State" },
      { key: "owner", label: "Owner" }, { key: "resource_pool", label: "Pool" },
      { key: "result", label: "Result", render: (t) => (t.result ? stateBadge(t.result) : "—") },
      { key: "exit_code", label: "Exit code", render: (t) => (t.exit_code === null || t.exit_code === undefined ? "—" : String(t.exit_code)) },
      { key: "created_at", label: "Started", render: (t) => fmtTime(t.created_at) },
      { key: "ended_at", label: "Ended", render: (t) => fmtTime(t.ended_at) },
      // a task's server, through the master's proxy (its owner alone may open it: docs/tasks.md)
      { key: "proxy_path", label: "Service", render: (t) => (t.proxy_path ? el("a", { href: t.proxy_path, target: "_blank", rel: "noopener", text: "Open" }) : "—") },
    ],
    rows: [...tasks].reverse(),  // newest first
  });
}

async function main() {
  if (!(await loadTasks())) return;
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
