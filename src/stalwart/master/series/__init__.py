"""The read model of metric series, shared by the API and the UI, below the routes.

- downsample.py: M4 buckets, the shared min/max grid and the mergeable SeriesSummary;
- index.py: the in-memory metrics index (a SeriesSummary per trial, group and metric), kept up by row id;
- axes.py: the x axes a series is drawn over (steps, epochs, report time);
- trial.py, experiment.py: one trial's series, and an experiment's trials on one shared x grid;
- encoding.py: the answers as compact JSON or float32 binary;
- cache.py: encoded answers by request and data version;
- read.py: what the handlers of routes/series.py call (the index refreshed, the cache, the work off the event loop).

The SQL it needs lives in master/queries/ (metrics.py, trials.py, experiments.py, series.py).
"""
