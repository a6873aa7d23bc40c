// The cluster page: resource pools and agents, with what runs on each slot; live over SSE.
import { $, el, fmtTime, readModel } from "./dom.js";
import { subscribe } from "./live.js";
import { renderTable } from "./table.js";

function slotCell(s) {
  if (!s.allocation_id) return el("span", { class: "slot free", text: `slot ${s.slot}: free` });
  const what = s.trial_id
    ? [el("a", { href: `/trials/${s.trial_id}`, text: `trial ${s.trial_id}` }), " of ",
      el("a", { href: `/experiments/${s.experiment_id}`, text: s.experiment_name || `experiment ${s.experiment_id}` })]
    : [s.allocation_id];
  return el("span", { class: "slot busy", title: s.state }, `slot ${s.slot}: `, what);
}

function instanceState(i) {
  const state = i.state === "RUNNING" && i.idleSince ? "IDLE" : i.state;
  const cls = state === "RUNNING" ? "ok" : state === "TERMINATED" ? "note" : "";
  return el("span", { class: cls, text: state });
}

function decisionLine(d) {
  const done = (d.launched.length ? [`launched ${d.launched.join(", ")}`] : [])
    .concat(d.terminated.map((t) => `terminated ${t.instance}: ${t.reason}`), d.notes);
  return el("li", { text: `${fmtTime(d.at)}: ${done.join("; ")}` });
}

// Elastic pools: their cloud instances (starting, running, idle, terminating, ended) and why, and the
// provisioner's last decisions (docs/elastic-agents.md).
function renderElastic(pools) {
  const box = $("#elastic");
  box.replaceChildren();
  for (const p of pools || []) {
    const table = el("div", { class: "table-wrap" });
    box.append(el("h2", { text: `Elastic pool ${p.pool}: ${p.provider}, ${p.minInstances} to ${p.maxInstances} instances` }), table);
    renderTable(table, {
      id: `instances-${p.pool}`, rowKey: (i) => i.id, empty: "No instances.",
      columns: [
        { key: "id", label: "Instance" }, { key: "agentId", label: "Agent" },
        { key: "state", label: "State", render: instanceState },
        { key: "launchedAt", label: "Launched", render: (i) => fmtTime(i.launchedAt) },
        { key: "idleSince", label: "Idle since", render: (i) => (i.idleSince ? fmtTime(i.idleSince) : "") },
        { key: "reason", label: "Why", render: (i) => i.reason || "" },
      ],
      rows: p.instances,
    });
    if (p.decisions.length) box.append(el("h3", { text: "Last decisions" }), el("ul", {}, p.decisions.map(decisionLine)));
  }
}

function render(m) {
  renderTable($("#pools"), {
    id: "pools-table", rowKey: (p) => p.name, empty: "No resource pools: no agent has registered.",
    columns: [
      { key: "name", label: "Pool" }, { key: "agents", label: "Agents", numeric: true },
      { key: "connected_agents", label: "Connected", numeric: true },
      { key: "slots", label: "Slots", numeric: true }, { key: "used_slots", label: "In use", numeric: true },
      { key: "slot_types", label: "Slot type", render: (p) => p.slot_types.join(", ") },
    ],
    rows: m.pools,
  });
  renderTable($("#agents"), {
    id: "agents-table", rowKey: (a) => a.id, empty: "No agents. Start one with: stalwart agent run --master URL",
    columns: [
      { key: "id", label: "Agent" }, { key: "hostname", label: "Host" }, { key: "resource_pool", label: "Pool" },
      { key: "connected", label: "Status", render: (a) => el("span", { class: a.connected ? "ok" : "error-text", text: a.connected ? (a.enabled ? "connected" : "disabled") : "lost" }) },
      { key: "slots", label: "Slots", render: (a) => `${a.used_slots}/${a.slots} ${a.slot_type}` },
      { key: "slots_detail", label: "Running", render: (a) => el("div", { class: "slots" }, a.slots_detail.map(slotCell)) },
      { key: "last_seen", label: "Last seen", render: (a) => fmtTime(a.last_seen) },
    ],
    rows: m.agents,
  });
  $("#pending").textContent = m.pending_allocations ? `(${m.pending_allocations} waiting for slots)` : "";
  renderElastic(m.elastic);
}

render(readModel());
subscribe({ page: "cluster" }, render);
