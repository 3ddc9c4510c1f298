"""bench/goals.py: issue 17's goals judged from the parts' results, as the README's Performance section reports them;
and bench/payouts_e2e.py's summary of a run, which goals.py reads."""

from __future__ import annotations

import json
import re

import pytest

from tests.bench import bench_module

goals = bench_module("goals")


def _row(name: str, rps: float, *, p99: float = 20.0, errors: int = 0) -> dict:
    return {"name": name, "rps": rps, "p99_ms": p99, "errors": errors}


def _peer(name: str, ours: float, peer: float) -> dict:
    return {"name": name, "rps_ours": ours, "rps_peer": peer, "ratio": ours / peer, "errors_ours": 0, "errors_peer": 0}


def _results(**changes) -> dict:
    """Every part's results as its script writes them (the keys goals.py reads), every goal met."""
    run = {"results": [_row("GET /account", 1000.0), _row("GET /payin?limit=20", 400.0),
                       _row("POST /payin PIX", 450.0), _row("FLOOR PIX charge + event", 480.0),
                       _row("POST /payout hot merchant", 300.0, p99=50.0),
                       _row("FLOOR payout write set, hot merchant", 330.0)],
           "peerComparison": [_peer("POST /payin PIX", 450.0, 140.0), _peer("POST /payout hot merchant", 300.0, 130.0)]}
    results = {
        "run": run,
        "e2e": {"summary": {"worker_ms_per_payout": 0.44, "backlog_after_tail": 0, "running_over_paused": 0.8}},
        "webhooks": {"deliveries_per_second": 420.0, "delay_p50_ms": 3.1,
                     "celery_floor": {"tasks": 2000, "tasks_per_second": 620.0, "worker_cpu_ms_per_task": 1.45},
                     "storm": {"fast": {"payout_done_after_s": 0.03}, "slow": {"payout_done_after_s": 0.4}}},
        "scaling": {"comparison": [{"page": "first", "ratio": 0.97, "errors": 0},
                                   {"page": "deep", "ratio": 0.91, "errors": 0}]},
    }
    for name, value in changes.items():
        results[name] = value
    return results


def _verdicts(rows: list[dict]) -> dict[str, str | None]:
    return {row["what"]: row["verdict"] for row in rows}


def test_every_goal_is_read_from_its_part_and_judged_against_its_target():
    rows = goals.judge(_results())

    assert [(row["goal"], row["what"], row["figure"], row["target"], row["verdict"]) for row in rows] == [
        (1, "hot-merchant payouts vs the textbook peer", 2.308, ">= 2x", "met"),
        (1, "hot-merchant payouts vs the payout floor", 0.909, ">= 0.85", "met"),
        (1, "hot-merchant payouts p99 at 8 clients", 50.0, "< 60 ms", "met"),
        (2, "worker CPU per payout", 0.44, "<= 3 ms", "met"),
        (2, "backlog 10 s after the load", 0, "= 0", "met"),
        (2, "API req/s, worker running / paused", 0.8, ">= 0.75", "met"),
        (3, "webhook deliveries per second, one plain worker", 420.0, ">= 300/s", "met"),
        (3, "webhook commit to arrival p50", 3.1, "< 200 ms", "met"),
        (3, "a payout task behind a storm of deliveries", 0.4, "<= 1 s", "met"),
        (4, "PIX creation vs the textbook peer", 3.214, ">= 3x", "met"),
        (4, "PIX creation vs the PIX floor", 0.938, ">= 0.9", "met"),
        (5, "GET /payin?limit=20 vs GET /account", 0.4, ">= 0.35", "met"),
        (5, "list pages at 1,000,000 charges vs 10,000 (the lowest)", 0.91, ">= 0.8", "met"),
    ]
    # The floors reached against the peer, beside the two ratios to it (330 / 130 and 480 / 140), and no-op tasks
    # through the same worker beside the deliveries.
    assert [(row["floor_reaches"], row["unit"]) for row in rows if row["floor_reaches"] is not None] == [
        (2.538, "x"), (620.0, "/s"), (3.429, "x")]


def test_a_ratio_to_the_peer_the_floor_itself_does_not_reach_is_a_limit_and_one_it_reaches_is_missed():
    results = _results()
    results["run"]["peerComparison"][0] = _peer("POST /payin PIX", 330.0, 140.0)  # 2.36x the peer
    results["run"]["results"][2] = _row("POST /payin PIX", 330.0)
    results["run"]["results"][3] = _row("FLOOR PIX charge + event", 350.0)  # the floor: 2.5x

    assert _verdicts(goals.judge(results))["PIX creation vs the textbook peer"] == "LIMIT"

    results["run"]["results"][3] = _row("FLOOR PIX charge + event", 440.0)  # the floor: 3.14x, so within reach
    verdicts = _verdicts(goals.judge(results))
    assert verdicts["PIX creation vs the textbook peer"] == "MISSED"
    assert verdicts["PIX creation vs the PIX floor"] == "MISSED"  # 330 / 440 = 0.75


@pytest.mark.parametrize(("floor", "verdict"), [(280.0, "LIMIT"), (620.0, "MISSED")])
def test_deliveries_below_the_target_are_a_limit_only_when_no_op_tasks_fall_short_of_it_too(floor, verdict):
    results = _results()
    results["webhooks"] = {**results["webhooks"], "deliveries_per_second": 250.0,
                           "celery_floor": {"tasks_per_second": floor}}

    assert _verdicts(goals.judge(results))["webhook deliveries per second, one plain worker"] == verdict


def test_targets_are_judged_at_their_bounds():
    results = _results(e2e={"summary": {"worker_ms_per_payout": 3.0, "backlog_after_tail": 1,
                                        "running_over_paused": 0.75}})
    results["run"]["results"][4] = _row("POST /payout hot merchant", 300.0, p99=60.0)

    verdicts = _verdicts(goals.judge(results))

    assert verdicts["worker CPU per payout"] == "met"  # <= 3
    assert verdicts["API req/s, worker running / paused"] == "met"  # >= 0.75
    assert verdicts["backlog 10 s after the load"] == "MISSED"
    assert verdicts["hot-merchant payouts p99 at 8 clients"] == "MISSED"  # < 60


def test_a_part_not_run_or_a_scenario_with_errors_is_not_measured_never_met():
    results = _results(webhooks=None)
    results["run"]["results"][1] = _row("GET /payin?limit=20", 400.0, errors=3)
    results["scaling"]["comparison"][1]["ratio"] = None

    verdicts = _verdicts(goals.judge(results))

    assert verdicts["webhook deliveries per second, one plain worker"] is None
    assert verdicts["a payout task behind a storm of deliveries"] is None
    assert verdicts["GET /payin?limit=20 vs GET /account"] is None
    assert verdicts["list pages at 1,000,000 charges vs 10,000 (the lowest)"] is None
    assert verdicts["PIX creation vs the PIX floor"] == "met"


@pytest.mark.parametrize(("changes", "strict_status"), [
    ({}, 0),
    ({"webhooks": None}, 1),  # not measured
])
def test_judging_written_results_prints_the_table_writes_goals_json_and_strict_fails_on_what_is_not_met(
        tmp_path, monkeypatch, capsys, changes, strict_status):
    monkeypatch.setattr(goals, "RESULTS", tmp_path)
    for name, value in _results(**changes).items():
        if value is not None:
            (tmp_path / goals.PARTS[name][1]).write_text(json.dumps(value))

    assert goals.main(["--judge-only"]) == 0
    assert goals.main(["--judge-only", "--strict"]) == strict_status

    written = json.loads((tmp_path / "goals.json").read_text())
    assert written["parts"] == ["run", "e2e", "webhooks", "scaling"]
    assert written["goals"] == goals.judge(_results(**changes))
    lines = capsys.readouterr().out.splitlines()
    assert lines[lines.index("=== issue 17's goals (judged from bench/results/) ===") + 2].split() == [
        "goal", "what", "figure", "target", "floor", "reaches", "verdict"]
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines]
    assert ["1", "hot-merchant payouts vs the payout floor", "0.909", ">= 0.85", "met"] in rows
    assert ["1", "hot-merchant payouts vs the textbook peer", "2.31", ">= 2x", "2.54x", "met"] in rows
    deliveries = ["3", "webhook deliveries per second, one plain worker", "-", ">= 300/s", "not measured"] if changes \
        else ["3", "webhook deliveries per second, one plain worker", "420.0", ">= 300/s", "620.0/s", "met"]
    assert deliveries in rows
    assert any(line.rstrip().endswith("not measured") for line in lines) == bool(changes)


def test_a_limit_does_not_fail_a_strict_run(tmp_path, monkeypatch):
    monkeypatch.setattr(goals, "RESULTS", tmp_path)
    results = _results()
    results["run"]["peerComparison"][0] = _peer("POST /payin PIX", 330.0, 140.0)
    results["run"]["results"][3] = _row("FLOOR PIX charge + event", 350.0)
    for name, value in results.items():
        (tmp_path / goals.PARTS[name][1]).write_text(json.dumps(value))

    assert goals.main(["--judge-only", "--strict"]) == 0


def test_the_end_to_end_summary_is_the_means_the_largest_backlog_and_the_cpu_over_every_payout():
    e2e = bench_module("payouts_e2e")

    def phase(req_s, *, created=0, completed=0, stop=0, after=0, cpu=0.0, finished=0, postgres=0.0):
        return {"api": {"req_s": req_s}, "payouts_created": created, "completed_total": completed,
                "backlog_at_load_stop": stop, "backlog_after_tail": after, "worker_cpu_s": cpu,
                "payouts_finished": finished, "postgres_cpu_s": postgres}

    result = {"running": [phase(300.0, created=9000, completed=9000, stop=800, cpu=4.0, finished=9000, postgres=6.0),
                          phase(330.0, created=9900, completed=9890, stop=1200, after=10, cpu=4.6, finished=9890,
                                postgres=7.2)],
              "paused": [phase(400.0), phase(420.0)]}

    assert e2e.summary(result) == {
        "running_req_s": 315.0, "paused_req_s": 410.0, "running_over_paused": 0.768,
        "payouts_created": 18900, "payouts_completed": 18890, "backlog_at_load_stop": 1200, "backlog_after_tail": 10,
        "worker_cpu_s": 8.6, "worker_ms_per_payout": 0.46, "postgres_ms_per_payout": 0.70,
    }
    assert e2e.summary({**result, "paused": []})["running_over_paused"] is None


def test_the_run_part_measures_every_scenario_a_goal_reads_and_only_those():
    """run.py chooses RUN_SCENARIOS and their baselines; the run part's goals, judged from those rows alone, all
    have a figure (a goal reading a scenario left out would show `not measured`)."""
    run = bench_module("run")
    args = run.parse_args(goals.PARTS["run"][0][1:])
    chosen = {scenario.name for scenario in run.chosen_scenarios(args.scenario, floor=args.floor)}

    assert chosen == {*goals.RUN_SCENARIOS, "GET /ping"}
    assert (args.peer, args.duration / args.rounds) == (True, 4.0)
    results = _results()
    results["run"]["results"] = [row for row in results["run"]["results"] if row["name"] in chosen]
    assert all(row["figure"] is not None for row in goals.judge(results) if row["what"] in {
        goal.what for goal in goals.GOALS if goal.part == "run"})


def test_each_floor_is_measured_right_after_its_endpoint():
    """run.py measures a round's scenarios in this order (each one on our side, then the peer's when it serves it)."""
    run = bench_module("run")
    args = run.parse_args(goals.PARTS["run"][0][1:])
    order = [scenario.name for scenario in run.chosen_scenarios(args.scenario, floor=args.floor)]

    assert order[order.index(goals.PIX) + 1] == goals.PIX_FLOOR
    assert order[order.index(goals.HOT) + 1] == goals.PAYOUT_FLOOR
