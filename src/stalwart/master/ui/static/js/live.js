// Live page models over server-sent events (the browser reconnects by itself).

export function subscribe(params, onModel) {
  const status = document.getElementById("live-status");
  const url = "/api/v1/ui/events?" + new URLSearchParams(params).toString();
  const source = new EventSource(url);
  const set = (state) => { if (status) status.dataset.state = state; };
  set("connecting");
  source.onopen = () => set("on");
  source.onerror = () => set(source.readyState === EventSource.CLOSED ? "off" : "connecting");
  source.addEventListener("model", (ev) => { set("on"); onModel(JSON.parse(ev.data)); });
  source.addEventListener("failure", (ev) => {
    set("off");
    source.close();
    const body = JSON.parse(ev.data);
    import("./api.js").then(({ flash }) => flash(body.error ? body.error.message : "live updates stopped"));
  });
  return { close: () => { source.close(); set("off"); } };
}
