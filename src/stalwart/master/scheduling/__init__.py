"""The scheduling domain: the scheduling pass, placing allocations on agents, the job queue, fit warnings.

Owns the rows of jobs and when an allocation leaves PENDING. Its face: `scheduling` (`tick`, `run_forever`),
`jobs` (the queue every task domain files its jobs in), `fit` (the slots warnings). `placing` is internal."""
