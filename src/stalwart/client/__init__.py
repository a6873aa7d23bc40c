"""The typed HTTP client of the master's REST API: the only place that knows URLs, headers and retries."""

from stalwart.client.http import Client, normalize_master_url

__all__ = ["Client", "normalize_master_url"]
