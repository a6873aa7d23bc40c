"""Workspaces and projects (where experiments and commands live), the pools a workspace may use, user groups and
role assignments.

Its face: `spaces` (workspaces and projects: create, change, archive, delete, views), `placement` (the project a
new experiment or command goes to, and the pools its workspace may use), `people` (groups and role
assignments). It sits beside the job queue, under the task domains, which place their work through it.
"""
