"""The typed HTTP client of the master's REST API: the only place that knows URLs, headers and retries."""

from stalwart.client.api import Client
from stalwart.client.http import MasterInternalError, normalize_master_url

__all__ = ["Client", "MasterInternalError", "normalize_master_url"]
