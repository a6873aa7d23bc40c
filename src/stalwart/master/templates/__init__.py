"""Configuration templates (docs/templates.md): named configs, each in a workspace, merged under the config of an
experiment or task when it is created.

Owns the rows of `config_templates`. Its face: `store` (create, replace, list what the caller may view, remove; a
template's view with its secrets hidden) and `expansion` (a template merged under a new experiment's or task's
config, once: the merged config is what is stored). It imports no other domain: the experiment and command routes
call `expansion` before they hand the config to their domains.
"""
