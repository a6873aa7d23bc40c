"""The pure parts of webhooks (docs/webhooks.md): the signature a receiver recomputes, the payload shapes
(Determined's event, a Slack message), the back-off, the CLI's --trigger forms and the master config's section."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from stalwart.api.errors import ConfigError, InvalidRequest
from stalwart.cli.webhook import parse_trigger
from stalwart.config.master import parse_master_config
from stalwart.master.webhooks import payloads, signing

EXP = {"id": 7, "state": "COMPLETED", "name": "mnist", "created_at": 100.0, "ended_at": 161.5,
       "config": {"resources": {"slots_per_trial": 2, "resource_pool": "gpus"}}}
PLACE = {"workspace": "vision", "project": "digits"}


def test_the_signature_is_hmac_sha256_of_timestamp_comma_body_as_the_docs_say() -> None:
    body = b'{"event_type":"CUSTOM"}'
    headers = signing.headers("k3y", 1700000000, body, "d-1", "CUSTOM")
    expected = hmac.new(b"k3y", b"1700000000," + body, hashlib.sha256).hexdigest()
    assert headers[signing.SIGNATURE] == expected == headers[signing.DET_SIGNATURE]
    assert headers[signing.TIMESTAMP] == "1700000000" and headers[signing.DELIVERY_ID] == "d-1"
    assert "k3y" not in json.dumps(headers)
    assert signing.signature("other", 1700000000, body) != expected


def test_back_off_doubles_from_one_second_and_gives_up_after_ten_attempts() -> None:
    delays = [signing.retry_delay(n) for n in range(1, 11)]
    assert delays[:4] == [1.0, 2.0, 4.0, 8.0] and delays[8] == 256.0
    assert delays[9] is None and signing.MAX_ATTEMPTS == 10


def test_the_default_payload_is_determineds_event_shape() -> None:
    data = {"experiment": payloads.experiment_data(EXP, PLACE)}
    ev = payloads.event(payloads.STATE_CHANGE, data, 1700000000.7, {"state": "COMPLETED"})
    sent = json.loads(payloads.render(payloads.DEFAULT, ev))
    assert set(sent) == {"event_id", "event_type", "timestamp", "condition", "event_data"}
    assert sent["event_type"] == "EXPERIMENT_STATE_CHANGE" and sent["timestamp"] == 1700000000
    assert sent["event_data"]["experiment"] == {"id": 7, "state": "COMPLETED", "name": "mnist", "duration": 61,
                                                "resource_pool": "gpus", "slots_per_trial": 2,
                                                "workspace": "vision", "project": "digits"}


def test_a_slack_message_has_blocks_and_links_the_experiment() -> None:
    ev = payloads.event(payloads.STATE_CHANGE, {"experiment": payloads.experiment_data(EXP, PLACE)}, 1.0)
    sent = json.loads(payloads.render(payloads.SLACK, ev, "https://stalwart.example.com"))
    assert sent["blocks"][0]["type"] == "section"
    assert "<https://stalwart.example.com/experiments/7|mnist (id 7)>" in sent["blocks"][0]["text"]["text"]
    assert sent["attachments"][0]["color"] == "#13B670"
    alert = payloads.event(payloads.CUSTOM, {"custom": {"title": "loss spiked", "description": "3.2", "level": "ERROR"},
                                             "experiment": payloads.experiment_data(EXP, PLACE)}, 1.0)
    text = json.dumps(json.loads(payloads.render(payloads.SLACK, alert)))
    assert "loss spiked" in text and "3.2" in text and "#DD5040" in text


def test_state_conditions() -> None:
    assert payloads.state_matches({"state": "ERROR"}, "ERROR")
    assert not payloads.state_matches({"state": "ERROR"}, "COMPLETED")


def test_the_clis_trigger_forms() -> None:
    assert parse_trigger("experiment-state:COMPLETED,error") == [
        {"trigger_type": "EXPERIMENT_STATE_CHANGE", "condition": {"state": "COMPLETED"}},
        {"trigger_type": "EXPERIMENT_STATE_CHANGE", "condition": {"state": "ERROR"}}]
    assert parse_trigger("custom") == [{"trigger_type": "CUSTOM"}]
    with pytest.raises(InvalidRequest, match="DONE is no experiment state"):
        parse_trigger("experiment-state:DONE")
    with pytest.raises(InvalidRequest, match="experiment-state:STATE"):
        parse_trigger("metric")


def test_the_master_configs_webhooks_section() -> None:
    cfg = parse_master_config({"webhooks": {"signing_key": "s3cret-key", "allowed_hosts": ["Hooks.Example.com",
                                                                                            "10.0.0.5:8443"],
                                            "base_url": "https://stalwart.example.com/"}})
    assert cfg.webhooks.allowed_hosts == ("hooks.example.com", "10.0.0.5:8443")
    assert cfg.webhooks.base_url == "https://stalwart.example.com" and cfg.webhooks.signing_key == "s3cret-key"
    assert "s3cret-key" not in repr(cfg)
    with pytest.raises(ConfigError, match=r"webhooks\.allowed_hosts\[0\].*host name or host:port"):
        parse_master_config({"webhooks": {"allowed_hosts": ["http://x/"]}})
    with pytest.raises(ConfigError, match=r"webhooks\.signing_key"):
        parse_master_config({"webhooks": {"signing_key": ""}})
