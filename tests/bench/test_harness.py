"""The harness of `python -m bench`: the load generator's requests and response parsing, the receiver and the
delivery rate, the figures, their ratios and bounds, and the table. No timing is asserted."""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench import __main__ as bench
from bench import deliveries, load


def _window(rps: float, seconds: float = 2.0, errors: dict | None = None) -> dict:
    return {"seconds": seconds, "latencies_us": [1000 * (n + 1) for n in range(int(rps * seconds))],
            "errors": errors or {}, "busy_cores": 2.0}


def test_a_static_request_is_encoded_once_and_a_body_anew_each_time():
    static = load.encode(load.Request("GET", "/account"), 8000, "Basic abc")
    assert static() is static()
    assert static().startswith(b"GET /account HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n")
    assert b"Authorization: Basic abc\r\n" in static()

    posted = load.encode(load.Request("POST", "/payin", bench.pix_body, expect=201), 8000, "")
    first, second = posted(), posted()
    head, body = first.split(b"\r\n\r\n", 1)
    assert b"Content-Length: %d" % len(body) in head and b"Authorization" not in head
    assert json.loads(body)["referenceId"] != json.loads(second.split(b"\r\n\r\n", 1)[1])["referenceId"]


@pytest.mark.parametrize(("data", "parsed"), [
    (b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}", (201, True)),
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", (200, False)),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}", None),  # the body is not all there yet
    (b"HTTP/1.1 200 OK\r\nContent-Len", None),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", (200, True)),
    (b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n", (404, False)),
])
def test_a_response_is_whole_once_its_content_length_arrived(data, parsed):
    assert load.parse_response(data) == parsed


def test_the_load_generator_counts_expected_answers_and_everything_else_as_errors():
    answers = iter([201, 400] * 10_000)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(next(answers))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    stub = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    calls = []
    try:
        part = load.drive(stub.server_address[1], load.Request("POST", "/payin", bench.pix_body, expect=201),
                          seconds=0.3, warmup=0, concurrency=2, idle=lambda: calls.append(1))
    finally:
        stub.shutdown()
        stub.server_close()

    assert part["latencies_us"] and set(part["errors"]) == {"status 400"}
    assert calls  # the parent's idle work ran while the children drove the load


def test_the_receiver_keeps_each_webhook_ids_first_arrival():
    receiver = deliveries.Receiver()
    receiver.start()
    try:
        port = int(receiver.url.split(":")[2].split("/")[0])
        for webhook_id in ("a", "b", "a"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("POST", "/hook", body=b"{}", headers={"webhook-id": webhook_id})
            assert conn.getresponse().status == 200
            conn.close()
    finally:
        receiver.close()

    assert set(receiver.first) == {"a", "b"}


def test_the_delivery_rate_leaves_out_the_first_and_last_tenth():
    steady = [n / 100 for n in range(100)]  # 100/s
    assert deliveries.sustained_rate([-5.0, *steady[1:-1], 30.0]) == pytest.approx(100, rel=0.02)
    assert deliveries.sustained_rate(steady[:5]) is None


def test_figures_pool_every_window_and_ratios_keep_the_spread_by_round():
    ours = bench.summary([_window(300), _window(100)], bench.PIX)
    theirs = bench.summary([_window(100), _window(50)], bench.PIX)

    assert ours["value"] == 200 and ours["by_round"] == [300, 100] and ours["errors"] == 0
    assert bench.ratio(ours, theirs) == {"value": pytest.approx(200 / 75), "low": 2.0, "high": 3.0}
    assert bench.summary([{"rate": 400.0}, {"rate": None}, {"rate": 300.0}], bench.WEBHOOKS)["value"] == 350.0


def test_a_bound_is_met_at_its_value_and_a_figure_with_errors_is_not_measured():
    ours, theirs = bench.summary([_window(200)], bench.PIX), bench.summary([_window(100)], bench.PIX)
    assert bench.verdict(bench.ratio(ours, theirs), 2.0, ours, theirs) == "ok"
    assert bench.verdict(bench.ratio(theirs, ours), 0.85, ours, theirs) == "MISSED"
    broken = bench.summary([_window(200, errors={"status 500": 3})], bench.PIX)
    assert bench.verdict(bench.ratio(broken, theirs), 2.0, broken, theirs) == "not measured"


def _side(name: str, figures: dict[str, list[dict]]) -> bench.Side:
    return bench.Side(name, bench.ROOT, {}, list(figures), parts=figures)


def test_the_table_has_every_figure_beside_the_peer_and_the_compared_revision():
    this = _side("this tree", {bench.PIX: [_window(600)], bench.PAYOUT: [_window(400)], bench.LIST: [_window(300)],
                               bench.ACCOUNT: [_window(900)], bench.WEBHOOKS: [{"rate": 420.0}]})
    floors = _side("floors", {bench.FLOOR_PIX: [_window(500)], bench.FLOOR_PAYOUT: [_window(300)]})
    peer = _side("textbook peer", {bench.PIX: [_window(250)], bench.PAYOUT: [_window(250)]})
    rev = _side("REV abc", {bench.PIX: [_window(750)], bench.PAYOUT: [_window(400)], bench.LIST: [_window(300)],
                            bench.ACCOUNT: [_window(900)], bench.WEBHOOKS: [{"rate": 400.0}]})

    rows = {row["figure"]: row for row in bench.rows([this, floors, peer, rev])}

    assert (rows[bench.PIX]["peer_verdict"], rows[bench.PAYOUT]["peer_verdict"]) == ("ok", "MISSED")  # 2.4x, 1.6x
    assert rows[bench.PIX]["rev_verdict"] == "MISSED"  # 600 / 750 = 0.80
    assert {rows[name]["rev_verdict"] for name in (bench.LIST, bench.ACCOUNT, bench.WEBHOOKS)} == {"ok"}
    assert rows[bench.FLOOR_PIX]["vs_floor"]["value"] == pytest.approx(600 / 500)
    lines = bench.table(list(rows.values()), "abc").splitlines()
    assert lines[0].split()[:3] == ["figure", "this", "tree"] and "REV abc" in lines[0]
    assert len(lines) == 1 + 7 and "endpoint/floor 1.20" in lines[6]
