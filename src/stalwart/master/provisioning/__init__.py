"""The provisioning domain: elastic pools' cloud instances (issue 31, docs/elastic-agents.md).

Owns the `instances` rows and each instance's single-use join credential. Once per scheduling pass (at most every
`PASS_INTERVAL_S` per pool) `provisioner.provision` lists the pool's instances in its cloud, follows what happened
to them (registered, idle, taken back), asks the pure `rm.elastic.decide` what to launch and terminate, and does
it. Its face: `provisioner` (`provision`), `describe` (a pool's instances and last decisions, for the API).
`clouds` (providers per pool, user-data) is internal."""
