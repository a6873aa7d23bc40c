"""The trial's authenticated connection to the master (patient: it waits out a master restart)."""

from __future__ import annotations

import os

from stalwart.client import Client
from stalwart.harness.info import ClusterInfo

RETRY_FOR_S = float(os.environ.get("STALWART_TRIAL_RETRY_S", "900"))


def trial_client(info: ClusterInfo) -> Client:
    return Client(info.master_url, allocation_token=info.session_token, session_token=info.user_token,
                  retry_for=RETRY_FOR_S, timeout=90)
