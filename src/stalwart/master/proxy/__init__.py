"""The task proxy: `/proxy/{task_id}/...` traffic to a task's service (routes/proxy.py wires it).

`target` finds a task's service and decides who may open it; `headers` says what crosses and what never does;
`forward` streams HTTP both ways as plain ASGI, over `upstream`'s kept-alive HTTP/1.1 connections to services;
`websocket` relays WebSockets; `tcp_tunnel` relays a shell's WebSocket as raw TCP to its sshd.
"""
