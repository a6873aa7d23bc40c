"""`determined.exec`: the programs Determined's harness runs inside a trial (here: `harness`)."""
