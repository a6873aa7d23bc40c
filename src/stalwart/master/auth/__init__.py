"""Auth: who may call what (the agents' cluster token, allocation tokens for trial processes).

Its face: `tokens`. Every layer of the master may use it."""
