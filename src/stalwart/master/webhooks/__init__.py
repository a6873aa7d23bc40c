"""Webhooks (docs/webhooks.md): POSTs to a URL when an experiment reaches a state or a trial calls `core.alert()`.

Its face: `hooks` (create, list, delete and test a webhook, each checked on its workspace or the cluster),
`events` (what fires: `experiment_state_changed`, called where an experiment's state is written, and `alert`, a
trial's CUSTOM event), `delivery` (the master's delivery loop: every delivery is stored before it is attempted,
sent with a short timeout and a bounded number at once, retried with back-off, and picked up again after a
restart). `payloads` (Determined's event shapes, the Slack message) and `signing` (the HMAC headers, the back-off)
are pure. It sits beside the job queue, under the task domains: the experiments domain calls `events`.
"""
