"""Pydantic models of every REST request and response body of the master, one module per resource."""
