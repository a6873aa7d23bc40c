// The job queue API as the UI expects it (see docs/ui.md); answers {available: false} while the master lacks it.
import { getJSON, post } from "./api.js";

export async function listJobs() {
  try {
    const data = await getJSON("/api/v1/jobs");
    return { available: true, jobs: data.jobs || [] };
  } catch (err) {
    if (err.status === 404 || err.status === 405) return { available: false, jobs: [] };
    throw err;
  }
}

export async function jobOf(type, entityId) {
  const { available, jobs } = await listJobs();
  if (!available) return null;
  return jobs.find((j) => j.type === type && String(j.entity_id) === String(entityId)) || null;
}

export function validPriority(value) {
  const n = Number(value);
  return String(value).trim() !== "" && Number.isInteger(n) && n >= 1 && n <= 99 ? n : null;
}

export const setPriority = (jobId, priority) => post(`/api/v1/jobs/${encodeURIComponent(jobId)}/priority`, { priority });
export const moveJob = (jobId, where) => post(`/api/v1/jobs/${encodeURIComponent(jobId)}/move`, where);
