"""Reading GET /metrics in tests: one sample's value by name and labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

TOKEN = "scrape-token-for-tests"


def scrape(client) -> dict[tuple[str, frozenset], float]:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)
