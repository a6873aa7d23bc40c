"""A model script with a bug, for the test-mode tests."""

from stalwart import core

with core.init() as ctx:
    for _op in ctx.searcher.operations():
        loss = 1 / 0
