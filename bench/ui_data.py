"""B-UI's data (bench/ui.py): one experiment of TRIALS trials x STEPS validation points, and LONG training points of
trial 1, loaded straight into a fresh Stalwart master database and into MLflow's store, the same numbers in both."""

from __future__ import annotations

import math
import pathlib
import sqlite3
import time

T0 = 1_790_000_000.0
CONFIG = """
name: bench-ui-{trials}x{steps}
description: {trials} trials x {steps} validation steps, loaded directly into the database by bench/ui.py
labels: [bench, ui]
entrypoint: python3 train.py
hyperparameters:
  learning_rate: {{type: log, base: 10, minval: -4, maxval: -1}}
  hidden: {{type: int, minval: 16, maxval: 512}}
  dropout: {{type: double, minval: 0.0, maxval: 0.5}}
searcher: {{name: random, metric: validation_loss, smaller_is_better: true, max_trials: {trials},
           max_length: {{batches: {steps}}}}}
"""


def hparams(i: int) -> dict:
    return {"learning_rate": 10 ** (-4 + 3 * ((i * 0.618034) % 1)), "hidden": 16 + (i * 37) % 497,
            "dropout": round(((i * 0.414214) % 1) * 0.5, 4)}


def val_point(i: int, s: int) -> tuple[float, float]:
    """(validation_loss, validation_accuracy) of trial index i at step s: a decaying curve with jitter."""
    jitter = ((s * 2654435761 + i * 97) % 1000) / 1e5
    loss = (0.5 + (i % 17) / 10) * math.exp(-s / (800 + 7 * i)) + 0.05 + (i % 13) / 100 + jitter
    return loss, 1.0 - loss / 3


def train_point(s: int) -> float:
    return 2.0 * math.exp(-s / 15000) + 0.1 + ((s * 2654435761) % 1000) / 5000 + (3.0 if s == 77_777 else 0.0)


# -- loading ---------------------------------------------------------------------------------------

def load_stalwart(db_url: str, trials: int, steps: int, long: int) -> dict:
    import sqlalchemy as sa

    from stalwart.config import load_experiment_config
    from stalwart.db import Database, tables as t

    t_start = time.monotonic()
    text = CONFIG.format(trials=trials, steps=steps)
    cfg = load_experiment_config(text, master_defaults={"checkpoint_storage": {"type": "shared_fs",
                                                                                "host_path": "/tmp"}}).config
    db = Database(db_url)
    db.migrate()
    with db.begin() as conn:
        exp_id = conn.execute(t.experiments.insert().values(
            name=cfg["name"], description=cfg.get("description"), labels=cfg["labels"], owner="bench", config=cfg,
            config_text=text, state="COMPLETED", archived=False, progress=1.0, created_at=T0, ended_at=T0 + 3600,
        )).inserted_primary_key[0]
        conn.execute(t.trials.insert(), [dict(
            experiment_id=exp_id, request_id=f"r{i}", hparams=hparams(i), seed=i, state="COMPLETED", restarts=0,
            runs=1, target_length=steps, progress=1.0, created_at=T0 + i, ended_at=T0 + 3000 + i,
        ) for i in range(trials)])
        ids = [r[0] for r in conn.execute(sa.select(t.trials.c.id).where(t.trials.c.experiment_id == exp_id)
                                          .order_by(t.trials.c.id))]
    rows = 0
    batch: list[dict] = []

    def flush() -> None:
        if batch:
            with db.begin() as conn:
                conn.execute(t.metrics.insert(), batch)
        batch.clear()

    for i, tid in enumerate(ids):
        for s in range(1, steps + 1):
            loss, acc = val_point(i, s)
            batch.append({"trial_id": tid, "trial_run_id": 1, "group_name": "validation", "steps_completed": s,
                          "metrics": {"validation_loss": loss, "validation_accuracy": acc},
                          "report_time": T0 + i + s * 0.3})
            if len(batch) >= 50_000:
                rows += len(batch)
                flush()
        if i == 0:
            for s in range(1, long + 1):
                batch.append({"trial_id": tid, "trial_run_id": 1, "group_name": "training", "steps_completed": s,
                              "metrics": {"loss": train_point(s)}, "report_time": T0 + s * 0.03})
                if len(batch) >= 50_000:
                    rows += len(batch)
                    flush()
    rows += len(batch)
    flush()
    db.dispose()
    return {"experiment_id": exp_id, "trial_id": ids[0], "rows": rows, "seconds": time.monotonic() - t_start}


def load_mlflow(root: pathlib.Path, trials: int, steps: int, long: int) -> dict:
    from mlflow.entities import ExperimentTag, Param, RunStatus, RunTag
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    t_start = time.monotonic()
    db = root / "mlflow.db"
    store = SqlAlchemyStore(f"sqlite:///{db}", (root / "mlartifacts").as_uri())
    exp_id = store.create_experiment(f"bench-ui-{trials}x{steps}", tags=[
        ExperimentTag("mlflow.experimentKind", "custom_model_development")])
    runs = []
    for i in range(trials):
        run = store.create_run(exp_id, "bench", int(T0 * 1000) + i, [RunTag("mlflow.runName", f"trial-{i + 1}")],
                               f"trial-{i + 1}")
        store.log_batch(run.info.run_id, [], [Param(k, str(v)) for k, v in hparams(i).items()], [])
        store.update_run_info(run.info.run_id, RunStatus.FINISHED, int((T0 + 3000 + i) * 1000), f"trial-{i + 1}")
        runs.append(run.info.run_id)
    store.engine.dispose()
    conn = sqlite3.connect(db)
    conn.execute("DROP INDEX index_metrics_run_uuid")
    conn.execute("DROP INDEX index_metrics_run_uuid_key_step")
    rows = 0
    sql = "INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, 0)"
    for key in ("validation_accuracy", "validation_loss"):  # primary-key order: key, timestamp, step
        batch = []
        for s in range(1, steps + 1):
            for i, run_id in enumerate(runs):
                loss, acc = val_point(i, s)
                value = loss if key == "validation_loss" else acc
                batch.append((key, value, int((T0 + i + s * 0.3) * 1000), run_id, s))
            if len(batch) >= 200_000:
                conn.executemany(sql, batch)
                rows += len(batch)
                batch = []
        conn.executemany(sql, batch)
        rows += len(batch)
    conn.executemany(sql, [("loss", train_point(s), int((T0 + s * 0.03) * 1000), runs[0], s)
                           for s in range(1, long + 1)])
    rows += long
    latest = []
    for i, run_id in enumerate(runs):
        loss, acc = val_point(i, steps)
        ts = int((T0 + i + steps * 0.3) * 1000)
        latest += [("validation_loss", loss, ts, steps, 0, run_id), ("validation_accuracy", acc, ts, steps, 0, run_id)]
    latest.append(("loss", train_point(long), int((T0 + long * 0.03) * 1000), long, 0, runs[0]))
    conn.executemany("INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid) "
                     "VALUES (?, ?, ?, ?, ?, ?)", latest)
    conn.execute("CREATE INDEX index_metrics_run_uuid ON metrics (run_uuid)")
    conn.execute('CREATE INDEX index_metrics_run_uuid_key_step ON metrics (run_uuid, "key", step)')
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()
    return {"experiment_id": exp_id, "run_id": runs[0], "rows": rows, "seconds": time.monotonic() - t_start}
