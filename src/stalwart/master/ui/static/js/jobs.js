// The job queue page: order, priorities, and controls to change priority and position (see docs/ui.md).
import { $, el, fmtTime } from "./dom.js";
import { flash, showError } from "./api.js";
import { listJobs, moveJob, setPriority, validPriority } from "./jobs_api.js";
import { renderTable } from "./table.js";

const box = $("#jobs");
let timer = null;

async function changePriority(job, input) {
  const p = validPriority(input.value);
  if (p === null) {
    flash(`Priority must be a whole number from 1 to 99 (got "${input.value}").`);
    input.value = job.priority;
    return;
  }
  try { await setPriority(job.job_id, p); flash(`Priority of ${job.name || job.job_id} set to ${p}.`, "info"); } catch (err) { showError(err); }
  refresh();
}

async function move(job, where) {
  try { await moveJob(job.job_id, where); } catch (err) { showError(err); }
  refresh();
}

function render(jobs) {
  renderTable(box, {
    id: "jobs-table", rowKey: (j) => j.job_id, empty: "The queue is empty.",
    columns: [
      { key: "queue_position", label: "#", numeric: true },
      { key: "name", label: "Job", render: (j) => (j.limited ? el("span", { class: "muted", text: "another workspace's job" })
        : j.type === "EXPERIMENT" && j.entity_id != null
        ? el("a", { href: `/experiments/${encodeURIComponent(j.entity_id)}`, text: j.name || j.job_id }) : j.name || j.job_id) },
      { key: "type", label: "Type" }, { key: "owner", label: "Owner" }, { key: "state", label: "State" },
      { key: "resource_pool", label: "Pool" },
      { key: "slots", label: "Slots", render: (j) => `${j.slots_allocated ?? 0}/${j.slots_requested ?? "?"}` },
      { key: "priority", label: "Priority", render: (j) => {
        const input = el("input", { type: "number", min: "1", max: "99", step: "1", value: j.priority, class: "priority", "aria-label": `Priority of ${j.job_id}` });
        return el("span", { class: "priority-edit" }, input, el("button", { type: "button", onclick: () => changePriority(j, input), text: "Set" }));
      } },
      { key: "weight", label: "Weight", numeric: true },
      { key: "move", label: "Position", render: (j) => {
        const i = jobs.indexOf(j);
        return el("span", {},
          el("button", { type: "button", title: "Move up", disabled: i === 0, onclick: () => move(j, { ahead_of: jobs[i - 1].job_id }), text: "↑" }),
          el("button", { type: "button", title: "Move down", disabled: i === jobs.length - 1, onclick: () => move(j, { behind_of: jobs[i + 1].job_id }), text: "↓" }));
      } },
      { key: "submitted_at", label: "Submitted", render: (j) => fmtTime(j.submitted_at) },
    ],
    rows: jobs,
  });
}

async function refresh() {
  clearTimeout(timer);
  try {
    const { available, jobs } = await listJobs();
    box.dataset.state = available ? "ready" : "unavailable";
    if (!available) {
      box.replaceChildren(el("p", { class: "unavailable", text: "The job queue is not available on this master yet (GET /api/v1/jobs answered 404)." }));
      return;
    }
    if (!box.contains(document.activeElement) || document.activeElement.tagName !== "INPUT") render(jobs);
  } catch (err) { showError(err); }
  timer = setTimeout(refresh, 2000);
}

refresh();
