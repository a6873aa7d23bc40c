// Talking to the master: JSON requests whose errors carry the API's own message, and the flash banner.

export class ApiError extends Error {
  constructor(status, message, details = []) {
    super(message);
    this.status = status;
    this.details = details;
  }
}

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

// The session's CSRF token (the master sets it beside the HttpOnly session cookie at sign-in).
export function csrfToken() {
  for (const part of document.cookie.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === "stalwart_csrf") return decodeURIComponent(rest.join("="));
  }
  return "";
}

// Headers of a call: calls that change something carry X-CSRF-Token, or the master refuses them (403).
export function headersFor(method, extra = {}) {
  const headers = { Accept: "application/json", ...extra };
  if (!SAFE.has(method.toUpperCase())) headers["X-CSRF-Token"] = csrfToken();
  return headers;
}

// The session ended (logged out elsewhere, expired, user deactivated): to the login page, back here afterwards.
export function toLogin() {
  location.assign(`/login?next=${encodeURIComponent(location.pathname + location.search)}`);
}

export async function request(method, url, body, { signal } = {}) {
  let res;
  try {
    res = await fetch(url, {
      method,
      headers: headersFor(method, body === undefined ? {} : { "Content-Type": "application/json" }),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(0, `cannot reach the master (${err.message})`);
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : {}; } catch { data = null; }
  if (res.status === 401) toLogin();
  if (!res.ok) throw failure(res.status, data);
  return data;
}

function failure(status, data) {
  const e = data && data.error;
  let message = e && e.message ? e.message : `HTTP ${status}`;
  if (!e && data && typeof data.detail === "string") message = data.detail;
  return new ApiError(status, message, (e && e.details) || []);
}

// A format=f32 series answer: uint32 n, n bytes of JSON, padding to 4, float32 y values (NaN = none).
export async function getF32Series(url) {
  let res;
  try { res = await fetch(url); } catch (err) { throw new ApiError(0, `cannot reach the master (${err.message})`); }
  if (res.status === 401) toLogin();
  if (!res.ok) {
    let data = null;
    try { data = await res.json(); } catch { data = null; }
    throw failure(res.status, data);
  }
  const buf = await res.arrayBuffer();
  const n = new DataView(buf).getUint32(0, true);
  const head = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 4, n)));
  const values = new Float32Array(buf, 4 + n + ((4 - (n % 4)) % 4));
  head.trials.forEach((t, i) => {
    const y = new Array(head.slots);
    for (let j = 0, k = i * head.slots; j < head.slots; j++, k++) { const v = values[k]; y[j] = v === v ? v : null; }
    t.y = y;
  });
  return head;
}

export const getJSON = (url, opts) => request("GET", url, undefined, opts);
export const post = (url, body = {}) => request("POST", url, body);

let flashTimer = null;

export function flash(message, kind = "error", details = []) {
  const box = document.getElementById("flash");
  if (!box) return;
  box.replaceChildren();
  box.dataset.kind = kind;
  const text = document.createElement("span");
  text.className = "flash-text";
  text.textContent = message;
  box.append(text);
  if (details && details.length) {
    const ul = document.createElement("ul");
    for (const d of details) { const li = document.createElement("li"); li.textContent = d; ul.append(li); }
    box.append(ul);
  }
  const close = document.createElement("button");
  close.type = "button";
  close.className = "flash-close";
  close.textContent = "×";
  close.setAttribute("aria-label", "Dismiss");
  close.addEventListener("click", () => { box.hidden = true; });
  box.append(close);
  box.hidden = false;
  clearTimeout(flashTimer);
  if (kind !== "error") flashTimer = setTimeout(() => { box.hidden = true; }, 6000);
}

export function showError(err) {
  if (err && err.name === "AbortError") return;
  flash(err && err.message ? err.message : String(err), "error", (err && err.details) || []);
}

// A button that asks for a second click before a destructive action.
export function confirmClick(button, run, prompt = "Click again to confirm") {
  const label = button.textContent;
  let armed = null;
  button.addEventListener("click", async () => {
    if (!armed) {
      button.textContent = prompt;
      button.classList.add("armed");
      armed = setTimeout(() => { armed = null; button.textContent = label; button.classList.remove("armed"); }, 4000);
      return;
    }
    clearTimeout(armed);
    armed = null;
    button.textContent = label;
    button.classList.remove("armed");
    await run();
  });
}
