"""Turning the load generator's raw measurements into figures, the table on stdout and bench/results/latest.json."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

from scenarios import Scenario

COLUMNS = ("endpoint", "requests", "req/s", "p50 ms", "p99 ms", "errors", "ratio", "target", "met?")
CPU_GROUPS = ("gunicorn", "postgres", "redis", "client")
# Cores busy with processes outside the bench beyond which the figures are flagged as noisy.
NOISY_CORES = 0.25


# --- Figures ---------------------------------------------------------------------------------------------------------
def percentile(ordered: list[int], fraction: float) -> int | None:
    """Nearest-rank percentile of an already sorted list."""
    if not ordered:
        return None
    rank = math.ceil(fraction * len(ordered))
    return ordered[min(max(rank, 1), len(ordered)) - 1]


def _ms(microseconds: int | None) -> float | None:
    return None if microseconds is None else round(microseconds / 1000, 3)


def _round_rps(part: dict) -> float:
    return len(part["latencies_us"]) / part["duration"]


def merge(scenario: Scenario, parts: list[dict]) -> dict:
    """One scenario's figures over all its rounds.

    req/s and the latency percentiles count only responses with an expected status; everything else (other
    statuses, connection failures, timeouts) is an error."""
    latencies = sorted(value for part in parts for value in part["latencies_us"])
    duration = sum(part["duration"] for part in parts)
    statuses: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    for part in parts:
        statuses.update(part["statuses"])
        failures.update(part["failures"])
    responses = sum(statuses.values())
    cpu = {name: round(sum(part["cpu"][name] * part["duration"] for part in parts) / duration, 2)
           for name in (*CPU_GROUPS, "machine")}
    cpu["rest"] = round(cpu["machine"] - sum(cpu[name] for name in CPU_GROUPS), 2)
    rps = len(latencies) / duration
    return {
        "name": scenario.name,
        "method": scenario.method,
        "duration": duration,
        "requests": responses + sum(failures.values()),
        "ok": len(latencies),
        "errors": responses - len(latencies) + sum(failures.values()),
        "rps": round(rps, 1),
        "p50_ms": _ms(percentile(latencies, 0.50)),
        "p90_ms": _ms(percentile(latencies, 0.90)),
        "p99_ms": _ms(percentile(latencies, 0.99)),
        "max_ms": _ms(latencies[-1] if latencies else None),
        "rps_by_round": [round(_round_rps(part), 1) for part in parts],
        "statuses": dict(sorted(statuses.items())),
        "failures": dict(failures),
        "cpu": cpu,
        # What one request costs the bench's own processes (server, its PostgreSQL backends, Redis, client).
        "cpu_ms_per_request": round(sum(cpu[name] for name in CPU_GROUPS) / rps * 1000, 3) if rps else None,
    }


def judge(scenarios: list[Scenario], parts: dict[str, list[dict]]) -> list[dict]:
    """Each scenario's figures with its ratio to its baseline and whether its targets are met: the share of the
    baseline's req/s and the p99 ceiling, whichever it has (both when it has both).

    A scenario with errors never meets its target: fast error responses must not pass for throughput."""
    rows = {scenario.name: merge(scenario, parts[scenario.name]) for scenario in scenarios}
    for scenario in scenarios:
        row = rows[scenario.name]
        baseline = rows.get(scenario.baseline) if scenario.baseline else None
        ratio = row["rps"] / baseline["rps"] if baseline and baseline["rps"] else None
        row.update({"baseline": scenario.baseline, "target": scenario.target, "p99_ms_max": scenario.p99_ms_max,
                    "ratio": None if ratio is None else round(ratio, 3), "ratio_by_round": None,
                    "cpu_ratio": None, "met": None})
        if baseline:
            # Rounds alternate scenarios, so round i of both ran under the same conditions: their spread shows
            # how much the machine's noise moved the ratio.
            row["ratio_by_round"] = [round(mine / theirs, 3) if theirs else None for mine, theirs in
                                     zip(row["rps_by_round"], baseline["rps_by_round"], strict=True)]
            # The ratio the two would have on a machine to themselves, if both are CPU-bound: the inverse ratio of
            # their CPU per request. Other processes on the machine move req/s a lot and this much less.
            if row["cpu_ms_per_request"] and baseline["cpu_ms_per_request"]:
                row["cpu_ratio"] = round(baseline["cpu_ms_per_request"] / row["cpu_ms_per_request"], 3)
        if scenario.target is not None or scenario.p99_ms_max is not None:
            row["met"] = row["errors"] == 0 and row["rps"] > 0
            if scenario.target is not None:
                row["met"] = row["met"] and ratio is not None and ratio >= scenario.target
            if scenario.p99_ms_max is not None:
                row["met"] = row["met"] and row["p99_ms"] is not None and row["p99_ms"] < scenario.p99_ms_max
    return list(rows.values())


# --- Text ------------------------------------------------------------------------------------------------------------
def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _cells(row: dict) -> tuple[str, ...]:
    ratio = _number(row["ratio"], 2) if row["baseline"] else "baseline"
    targets = ([] if row["target"] is None else [f">= {row['target']:.2f}"]) + (
        [] if row.get("p99_ms_max") is None else [f"p99 < {row['p99_ms_max']:g}"])
    target = ", ".join(targets) or "-"
    met = "-" if row["met"] is None else ("yes" if row["met"] else "MISSED")
    return (row["name"], f"{row['requests']:,}", _number(row["rps"], 1), _number(row["p50_ms"], 2),
            _number(row["p99_ms"], 2), f"{row['errors']:,}", ratio, target, met)


def table(rows: list[dict]) -> str:
    return _grid(COLUMNS, [_cells(row) for row in rows])


def _grid(columns: tuple[str, ...], cells: list[tuple[str, ...]]) -> str:
    lines = [columns, *cells]
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]

    def render(cells: tuple[str, ...]) -> str:
        # Names read best left-aligned, numbers right-aligned.
        return "  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                         for i, (cell, width) in enumerate(zip(cells, widths, strict=True)))

    return "\n".join([render(lines[0]), "  ".join("-" * width for width in widths), *map(render, lines[1:])])


def cpu_lines(rows: list[dict]) -> list[str]:
    """Where the machine's CPU went: tells a saturated server from a starved client or a busy machine."""
    lines = []
    for row in rows:
        cpu = row["cpu"]
        parts = ", ".join(f"{name} {cpu[name]:.2f}" for name in (*CPU_GROUPS, "rest"))
        # CPU per request moves far less than req/s when other processes compete for the cores.
        per_request = "; per request: " + ", ".join(
            f"{name} {cpu[name] / row['rps'] * 1000:.2f}" for name in CPU_GROUPS
        ) + f" = {row['cpu_ms_per_request']:.2f} ms" if row["rps"] else ""
        lines.append(f"  {row['name']}: {cpu['machine']:.2f} busy = {parts}{per_request}")
    return lines


def detail_lines(rows: list[dict]) -> list[str]:
    lines = []
    for row in rows:
        rounds = " ".join(_number(value, 0) for value in row["rps_by_round"])
        line = f"  {row['name']}: req/s by round {rounds}"
        if row["ratio_by_round"]:
            line += "; ratio by round " + " ".join(_number(value, 2) for value in row["ratio_by_round"])
        if row["cpu_ratio"] is not None:
            line += f"; ratio from CPU per request {row['cpu_ratio']:.2f}"
        if row["errors"]:
            line += f"; statuses {row['statuses']}, failures {row['failures']}"
        lines.append(line)
    return lines


def verdicts(rows: list[dict]) -> list[str]:
    lines = []
    for row in rows:
        if row["met"] is None:
            continue
        ratio = "n/a" if row["ratio"] is None else f"{row['ratio']:.0%}"
        figures = [f"sustained {row['rps']:,.1f} req/s"]
        if row["baseline"]:
            target = f" (target >= {row['target']:.0%})" if row["target"] is not None else ""
            figures[0] += f" = {ratio} of {row['baseline']}{target}"
        if row.get("p99_ms_max") is not None:
            figures.append(f"p99 {_number(row['p99_ms'], 1)} ms (target < {row['p99_ms_max']:g} ms)")
        errors = f", with {row['errors']:,} errors" if row["errors"] else ""
        lines.append(f"{'MET' if row['met'] else 'MISSED'}: {row['name']} {', '.join(figures)}{errors}")
    return lines


def noise_warnings(rows: list[dict], idle_busy: float) -> list[str]:
    warnings = []
    if idle_busy > NOISY_CORES:
        warnings.append(f"the machine had {idle_busy:.2f} cores busy before the bench started")
    noisy = [row["name"] for row in rows if row["cpu"]["rest"] > NOISY_CORES]
    if noisy:
        warnings.append(f"other processes took over {NOISY_CORES} cores during {', '.join(noisy)} (the 'rest' "
                        "above; includes the kernel's loopback work)")
    return [f"WARNING: {text}: figures are noisy, compare ratios by round" for text in warnings]


# --- Before and after (run.py --compare) -----------------------------------------------------------------------------
COMPARE_COLUMNS = ("endpoint", "req/s before", "req/s after", "change", "p99 ms before", "p99 ms after", "change",
                   "ratio before", "ratio after", "change")
COMPARED = ("rps", "p99_ms", "ratio", "cpu_ms_per_request")


def _change(before: float | None, after: float | None) -> float | None:
    """after / before - 1, in percent."""
    return None if not before or after is None else round((after / before - 1) * 100, 1)


def compare(before: list[dict], after: list[dict]) -> list[dict]:
    """Per scenario, the figures of both servers (ratio: to its baseline on the same server) and the change after /
    before in percent; also by round, each round having measured both back to back."""
    rows = []
    for old, new in zip(before, after, strict=True):
        row = {"name": new["name"], "baseline": new["baseline"]}
        for key in COMPARED:
            row.update({f"{key}_before": old[key], f"{key}_after": new[key],
                        f"{key}_change_pct": _change(old[key], new[key])})
        row["rps_change_pct_by_round"] = [_change(*pair) for pair in
                                          zip(old["rps_by_round"], new["rps_by_round"], strict=True)]
        row["errors_before"], row["errors_after"] = old["errors"], new["errors"]
        rows.append(row)
    return rows


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def compare_table(rows: list[dict]) -> str:
    def cells(row: dict) -> tuple[str, ...]:
        ratio = ([_number(row["ratio_before"], 2), _number(row["ratio_after"], 2), _percent(row["ratio_change_pct"])]
                 if row["baseline"] else ["baseline", "baseline", "-"])
        return (row["name"], _number(row["rps_before"], 1), _number(row["rps_after"], 1),
                _percent(row["rps_change_pct"]), _number(row["p99_ms_before"], 2), _number(row["p99_ms_after"], 2),
                _percent(row["p99_ms_change_pct"]), *ratio)

    return _grid(COMPARE_COLUMNS, [cells(row) for row in rows])


def compare_lines(rows: list[dict]) -> list[str]:
    lines = []
    for row in rows:
        line = f"  {row['name']}: req/s change by round " + " ".join(map(_percent, row["rps_change_pct_by_round"]))
        if row["cpu_ms_per_request_before"] and row["cpu_ms_per_request_after"]:
            line += (f"; CPU per request {row['cpu_ms_per_request_before']:.2f} -> "
                     f"{row['cpu_ms_per_request_after']:.2f} ms ({_percent(row['cpu_ms_per_request_change_pct'])})")
        if row["errors_before"] or row["errors_after"]:
            line += f"; errors {row['errors_before']:,} -> {row['errors_after']:,}"
        lines.append(line)
    return lines


# --- Ours vs the textbook peer (run.py --peer) ------------------------------------------------------------------------
PEER_COLUMNS = ("endpoint", "req/s ours", "req/s peer", "ours/peer", "p99 ms ours", "p99 ms peer",
                "CPU ms/req ours", "CPU ms/req peer", "ours/peer by CPU")


def _ratio(mine: float | None, theirs: float | None) -> float | None:
    return round(mine / theirs, 3) if mine and theirs else None


def peer_compare(ours: list[dict], peer: list[dict]) -> list[dict]:
    """Per scenario the peer serves, both servers' figures and ours over the peer's: req/s, by round (each round
    measured both back to back) and from CPU per request (the peer's cost over ours: higher is better for us)."""
    theirs = {row["name"]: row for row in peer}
    rows = []
    for mine in ours:
        other = theirs.get(mine["name"])
        if other is None:
            continue
        rows.append({
            "name": mine["name"],
            "rps_ours": mine["rps"], "rps_peer": other["rps"], "ratio": _ratio(mine["rps"], other["rps"]),
            "ratio_by_round": [_ratio(*pair) for pair in zip(mine["rps_by_round"], other["rps_by_round"],
                                                               strict=True)],
            "p99_ms_ours": mine["p99_ms"], "p99_ms_peer": other["p99_ms"],
            "cpu_ms_per_request_ours": mine["cpu_ms_per_request"],
            "cpu_ms_per_request_peer": other["cpu_ms_per_request"],
            "cpu_ratio": _ratio(other["cpu_ms_per_request"], mine["cpu_ms_per_request"]),
            "errors_ours": mine["errors"], "errors_peer": other["errors"],
        })
    return rows


def peer_table(rows: list[dict]) -> str:
    return _grid(PEER_COLUMNS, [(row["name"], _number(row["rps_ours"], 1), _number(row["rps_peer"], 1),
                                 _number(row["ratio"], 2), _number(row["p99_ms_ours"], 2),
                                 _number(row["p99_ms_peer"], 2), _number(row["cpu_ms_per_request_ours"], 2),
                                 _number(row["cpu_ms_per_request_peer"], 2), _number(row["cpu_ratio"], 2))
                                for row in rows])


def peer_lines(rows: list[dict]) -> list[str]:
    lines = []
    for row in rows:
        line = f"  {row['name']}: ours/peer by round " + " ".join(_number(value, 2) for value in row["ratio_by_round"])
        if row["errors_ours"] or row["errors_peer"]:
            line += f"; errors ours {row['errors_ours']:,}, peer {row['errors_peer']:,}"
        lines.append(line)
    return lines


def write_json(path: Path, meta: dict, rows: list[dict], **extra: list[dict]) -> None:
    """`extra`: run.py --compare's "before" rows and "comparison", beside this tree's "results"."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "results": rows, **extra}, indent=2) + "\n")
