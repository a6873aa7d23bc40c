"""The master config's `limits` section: sizes with units, defaults, and errors naming the key."""

from __future__ import annotations

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config.master import LimitsConfig, parse_master_config

MIB = 1024 * 1024


def test_defaults_fit_a_95_mib_context_sent_as_base64_json():
    limits = parse_master_config({}).limits
    assert limits == LimitsConfig(max_request_body=130 * MIB, max_context_members=100_000,
                                  max_context_size=95 * MIB)
    assert limits.max_request_body > 95 * MIB * 4 // 3 + MIB


@pytest.mark.parametrize("given, size", [
    (1000, 1000), ("200MiB", 200 * MIB), ("1.5 GiB", int(1.5 * 1024 * MIB)), ("500MB", 500_000_000), ("64kib", 65536),
])
def test_sizes_take_integers_or_units(given, size):
    cfg = parse_master_config({"limits": {"max_request_body": given, "max_context_size": given}})
    assert cfg.limits.max_request_body == size == cfg.limits.max_context_size
    assert cfg.limits.max_context_members == 100_000


@pytest.mark.parametrize("limits, message", [
    ({"max_request_body": "lots"}, "limits.max_request_body: expected a size in bytes (an integer, or a number with "
                                   "a unit such as 130MiB, 2GiB, 500MB), got 'lots'"),
    ({"max_context_size": "12 parsecs"}, "limits.max_context_size: expected a size in bytes"),
    ({"max_request_body": 0}, "limits.max_request_body: expected a size of at least 1 bytes, got 0"),
    ({"max_context_members": 0}, "limits.max_context_members: expected an integer >= 1, got 0"),
    ({"max_context_members": "many"}, "limits.max_context_members: expected an integer >= 1, got 'many'"),
    ({"max_request_bdy": 5}, "limits.max_request_bdy: unknown key; did you mean 'max_request_body'?"),
])
def test_bad_limits_name_the_key(limits, message):
    with pytest.raises(ConfigError) as err:
        parse_master_config({"limits": limits})
    assert message in str(err.value)
