"""The model registry: models (named on the whole cluster, each in a workspace) and their numbered versions, each
pointing at a checkpoint (docs/model-registry.md).

Its face: `models` (create, list, change, archive, move, delete; a model's view), `versions` (register a checkpoint
as a model's next version, list, change, delete; a version's view), `names` (the pure rules of a model's name). It
sits beside the other domains and imports none of them: checkpoint GC and deleting (experiments/) read the versions
that use a checkpoint through `queries.models_registry`, never through this package.
"""
