"""Helpers shared by the pay-in and payout API tests: reading events and the statement back through the API."""

from __future__ import annotations

import re

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
ISO_MS_Z = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"


def events_of(client, object_id: str) -> list[dict]:
    """GET /events?objectId=…, newest first, each envelope's generated values checked for their format."""
    response = client.get("/events", {"objectId": object_id, "limit": 100})
    assert response.status_code == 200, response.content
    events = response.json()["data"]
    for event in events:
        assert re.fullmatch(UUID, event["id"]), event["id"]
        assert re.fullmatch(ISO_MS_Z, event["createdAt"]), event["createdAt"]
    return events


def envelope(event: dict, *, type: str, obj: dict, previous_status: str | None, livemode: bool = False) -> dict:
    """The whole event the SPEC (§6.1) requires; id and createdAt (format-checked by `events_of`) from `event`."""
    return {"id": event["id"], "type": type, "createdAt": event["createdAt"], "livemode": livemode,
            "apiVersion": "2026-11-20", "data": {"object": obj, "previousStatus": previous_status}}


def statement(client) -> list[dict]:
    """GET /balance/transactions, newest first, with each line's id and createdAt checked and left out."""
    response = client.get("/balance/transactions", {"limit": 100})
    assert response.status_code == 200, response.content
    lines = response.json()["data"]
    assert len({line["id"] for line in lines}) == len(lines)
    out = []
    for line in lines:
        assert isinstance(line["id"], str) and line["id"], line
        assert re.fullmatch(ISO_MS_Z, line["createdAt"]), line
        out.append({k: v for k, v in line.items() if k not in ("id", "createdAt")})
    return out
