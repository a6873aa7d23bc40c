"""Typed reads and writes per table: the one place the master's routes and state machines get SQL from.

One module per table (or close group of tables). Each function takes an open connection (the caller
owns the transaction) and returns rows as read-only mappings (`Row`), plain values, or nothing.
"""
