// A table with sortable headers and optional row selection; sorting itself is done by the caller (server-side).
import { el } from "./dom.js";

// columns: [{key, label, render(row) -> Node|string, sortable, numeric, title, class}] (`class`: of its cells, e.g.
// "wrap" for a column whose cells may wrap at spaces)
const cellClass = (c) => [c.numeric ? "num" : "", c.class || ""].join(" ").trim();

export function renderTable(container, { columns, rows, sort, order, onSort, rowKey = (r) => r.id, selected, onSelect,
  empty = "Nothing here yet.", id }) {
  const head = el("tr", {},
    selected ? el("th", { class: "select" }, el("input", {
      type: "checkbox", "aria-label": "Select all",
      checked: rows.length > 0 && rows.every((r) => selected.has(rowKey(r))),
      onchange: (ev) => { for (const r of rows) ev.target.checked ? selected.add(rowKey(r)) : selected.delete(rowKey(r)); onSelect(); },
    })) : null,
    columns.map((c) => {
      const active = sort === c.key;
      const th = el("th", { class: cellClass(c), title: c.title || null, "aria-sort": active ? (order === "asc" ? "ascending" : "descending") : null });
      if (c.sortable && onSort) {
        th.append(el("button", {
          type: "button", class: "sort" + (active ? " active" : ""), dataset: { sort: c.key },
          onclick: () => onSort(c.key, active && order === "asc" ? "desc" : active ? "asc" : (c.numeric ? "desc" : "asc")),
        }, c.label, active ? (order === "asc" ? " ▲" : " ▼") : ""));
      } else {
        th.append(c.label);
      }
      return th;
    }));
  const body = rows.length
    ? rows.map((r) => el("tr", { dataset: { key: String(rowKey(r)) } },
      selected ? el("td", { class: "select" }, el("input", {
        type: "checkbox", "aria-label": `Select ${rowKey(r)}`, checked: selected.has(rowKey(r)),
        onchange: (ev) => { ev.target.checked ? selected.add(rowKey(r)) : selected.delete(rowKey(r)); onSelect(); },
      })) : null,
      columns.map((c) => {
        const v = c.render ? c.render(r) : r[c.key];
        return el("td", { class: cellClass(c) }, v === null || v === undefined ? "—" : v);
      })))
    : [el("tr", {}, el("td", { class: "empty", colspan: columns.length + (selected ? 1 : 0), text: empty }))];
  const table = el("table", { class: "grid", id: id || null }, el("thead", {}, head), el("tbody", {}, body));
  container.replaceChildren(table);
  return table;
}

export function renderPager(container, { total, offset, limit, onPage }) {
  if (total <= limit && offset === 0) { container.replaceChildren(); return; }
  const end = Math.min(total, offset + limit);
  container.replaceChildren(
    el("button", { type: "button", disabled: offset === 0, onclick: () => onPage(Math.max(0, offset - limit)) }, "‹ Previous"),
    el("span", { text: `${total ? offset + 1 : 0}–${end} of ${total.toLocaleString("en-US")}` }),
    el("button", { type: "button", disabled: end >= total, onclick: () => onPage(offset + limit) }, "Next ›"));
}
