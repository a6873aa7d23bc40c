// The experiment page's "Open TensorBoard" button: opens the caller's running TensorBoard of this experiment, or
// starts one (POST /api/v1/tensorboards) and opens it once it serves, at /proxy/tensorboard-<id>/.
import { $, readModel } from "./dom.js";
import { flash, getJSON, post, showError } from "./api.js";

const expId = readModel().experiment.id;
const me = ($("#user-name") || {}).dataset?.username;
const WAIT_MS = 120_000;

// The id of a running TensorBoard the caller started that shows exactly this experiment, or null.
async function mine() {
  const { tensorboards } = await getJSON("/api/v1/tensorboards");
  for (const tb of tensorboards.filter((t) => t.owner === me)) {
    const { tensorboard } = await getJSON(`/api/v1/tensorboards/${tb.id}`);
    const shown = (tensorboard.config || {}).tensorboard || {};
    const exps = shown.experiment_ids || [];
    if (exps.length === 1 && exps[0] === expId && !(shown.trial_ids || []).length) return tb.id;
  }
  return null;
}

// Its proxy path once its server answers (a start takes a few seconds).
async function served(id) {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    const { tensorboard } = await getJSON(`/api/v1/tensorboards/${id}`);
    if (tensorboard.proxy_path) return tensorboard.proxy_path;
    if (tensorboard.result !== "ACTIVE") throw new Error(`TensorBoard ${id} ended: ${tensorboard.end_reason || "see its logs"}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`TensorBoard ${id} does not answer yet; try again, or see \`stalwart tensorboard logs ${id}\``);
}

async function open(button) {
  button.disabled = true;
  try {
    let id = await mine();
    if (id === null) {
      id = (await post("/api/v1/tensorboards", { experiment_ids: [expId] })).tensorboard.id;
      flash(`Starting TensorBoard ${id}…`, "info");
    }
    location.href = await served(id);
  } catch (err) {
    showError(err);
  } finally {
    button.disabled = false;
  }
}

const button = $("#open-tensorboard");
if (button) button.addEventListener("click", () => open(button));
