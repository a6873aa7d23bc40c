// Commands and other tasks with their logs; shows a clear notice while the master has no task API.
import { $, el, fmtTime } from "./dom.js";
import { getJSON, showError } from "./api.js";
import { renderTable } from "./table.js";
import { LogViewer } from "./logs.js";

const box = $("#tasks");
const taskId = document.querySelector("h1").dataset.task;
let tasks = [];

async function loadTasks() {
  try {
    const data = await getJSON("/api/v1/tasks");
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
      { key: "type", label: "Type" }, { key: "description", label: "Description" }, { key: "state", label: "State" },
      { key: "owner", label: "Owner" }, { key: "resource_pool", label: "Pool" },
      { key: "created_at", label: "Started", render: (t) => fmtTime(t.created_at) },
    ],
    rows: tasks,
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
