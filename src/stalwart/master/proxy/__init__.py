"""The task proxy: `/proxy/{task_id}/...` traffic to a task's service (routes/proxy.py wires it).

`target` finds a task's service and decides who may open it; `headers` says what crosses and what never does;
`forward` streams HTTP both ways; `websocket` relays WebSockets.
"""
