"""The scheduling domain: the scheduling pass, the resource managers that place allocations, the job queue, fit
warnings.

Owns the rows of jobs and when an allocation leaves PENDING. Its face: `scheduling` (`tick`, `run_forever`),
`jobs` (the queue every task domain files its jobs in), `fit` (the slots warnings), `managers` (which resource
manager serves each pool: `for_pool`, `open_all`). `placing` (rows as the managers' gangs) and `agent_manager` (the
agent resource manager, `stalwart.rm`'s first implementation) are internal."""
