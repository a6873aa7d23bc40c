// A log viewer: the filtered tail from the server, then new lines followed live from an NDJSON stream.
import { el, fmtTime } from "./dom.js";
import { showError } from "./api.js";

const LEVELS = ["TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"];
const MAX_LINES = 5000;
const LEADING_LEVEL = new RegExp(`^\\s*(${LEVELS.join("|")})(?::\\s*|\\s+)`, "i");

// A line's text without the level it starts with when that is the line's own level ("INFO: loss 0.3" of an INFO
// line, as Python's logging writes it): the level column already shows it, once.
export function withoutLevel(text, level) {
  const m = LEADING_LEVEL.exec(text);
  return m && m[1].toUpperCase() === String(level).toUpperCase() ? text.slice(m[0].length) : text;
}

export class LogViewer {
  // source: { load({level, q}) -> {logs, last_id}, followUrl(afterId) -> url, live() -> bool }
  constructor(panel, source) {
    this.panel = panel;
    this.source = source;
    this.lastId = 0;
    this.count = 0;
    this.abort = null;
    this.queue = [];
    this.level = el("select", { "aria-label": "Minimum level", name: "level" },
      el("option", { value: "", text: "All levels" }), LEVELS.slice(1).map((l) => el("option", { value: l, text: `${l} and above` })));
    this.search = el("input", { type: "search", name: "q", placeholder: "Search logs", "aria-label": "Search logs" });
    this.followBox = el("input", { type: "checkbox", name: "follow", checked: true });
    this.status = el("span", { class: "note" });
    this.lines = el("div", { class: "logs", role: "log", tabindex: "0" });
    panel.replaceChildren(el("div", { class: "logs-controls" }, this.level, this.search,
      el("label", {}, this.followBox, " Follow"), this.status), this.lines);
    let timer = null;
    this.level.addEventListener("change", () => this.reload());
    this.search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => this.reload(), 300); });
    this.followBox.addEventListener("change", () => (this.followBox.checked ? this.follow() : this.stop()));
  }

  filters() { return { level: this.level.value, q: this.search.value }; }

  async reload() {
    this.stop();
    try {
      const { logs, last_id: lastId, truncated } = await this.source.load(this.filters());
      this.lines.replaceChildren();
      this.count = 0;
      if (truncated) this.lines.append(el("div", { class: "line more", text: "… earlier lines not shown (narrow the search to see them)" }));
      if (!logs.length) this.lines.append(el("div", { class: "line more", text: this.search.value || this.level.value ? "No lines match." : "No log lines yet." }));
      this.append(logs);
      this.lastId = lastId;
      if (this.followBox.checked) this.follow();
    } catch (err) { showError(err); }
  }

  matches(entry) {
    const { level, q } = this.filters();
    if (level && LEVELS.indexOf(entry.level) < LEVELS.indexOf(level)) return false;
    return !q || String(entry.log).includes(q);
  }

  line(entry, q) {
    const text = withoutLevel(String(entry.log), entry.level);
    const msg = el("span", { class: "msg" });
    if (q && text.includes(q)) {
      const parts = text.split(q);
      parts.forEach((p, i) => { msg.append(p); if (i < parts.length - 1) msg.append(el("mark", { text: q })); });
    } else msg.textContent = text;
    return el("div", { class: `line lvl-${String(entry.level).toLowerCase()}`, dataset: { id: String(entry.id) } },
      el("span", { class: "ts", text: fmtTime(entry.timestamp) }), el("span", { class: "lvl", text: entry.level }), msg);
  }

  append(entries) {
    if (!entries.length) return;
    const atBottom = this.lines.scrollHeight - this.lines.scrollTop - this.lines.clientHeight < 40;
    const { q } = this.filters();
    const frag = document.createDocumentFragment();
    for (const e of entries) frag.append(this.line(e, q));
    this.lines.append(frag);
    this.count += entries.length;
    while (this.lines.childElementCount > MAX_LINES) this.lines.firstElementChild.remove();
    this.panel.dataset.lines = String(this.count);
    if (atBottom) this.lines.scrollTop = this.lines.scrollHeight;
  }

  flushSoon() {
    if (this.flushing) return;
    this.flushing = true;
    requestAnimationFrame(() => {
      this.flushing = false;
      const batch = this.queue.splice(0);
      this.append(batch.filter((e) => this.matches(e)));
    });
  }

  stop() {
    if (this.abort) this.abort.abort();
    this.abort = null;
    clearTimeout(this.retry);
    this.status.textContent = "";
  }

  async follow() {
    this.stop();
    const ctrl = new AbortController();
    this.abort = ctrl;
    this.status.textContent = "following…";
    this.panel.dataset.following = "1";
    try {
      const res = await fetch(this.source.followUrl(this.lastId), { signal: ctrl.signal });
      if (!res.ok) throw new Error(`cannot follow the logs (HTTP ${res.status})`);
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
          const raw = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (!raw.trim()) continue;
          const entry = JSON.parse(raw);
          this.lastId = Math.max(this.lastId, entry.id || 0);
          this.queue.push(entry);
        }
        this.flushSoon();
      }
    } catch (err) {
      if (err.name === "AbortError") return;
      showError(err);
    }
    if (this.abort !== ctrl) return;
    this.status.textContent = this.source.live() ? "waiting for the task…" : "the task has ended";
    this.panel.dataset.following = "0";
    if (this.source.live()) this.retry = setTimeout(() => this.follow(), 3000);
  }
}
