"""Turns raw runs into medians, ratios against Taskloom, and a markdown table."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import NamedTuple

BASELINE = "taskloom"


class Metric(NamedTuple):
    workload: str
    key: str
    label: str  # a template filled from the sizes
    fmt: str
    better: str  # "higher", "lower" or "ideal" (the ideal is in the label)
    ratio: bool = True  # False for percentages and "ideal" metrics


M = Metric
# fmt: off
METRICS = [
    M("W1", "tasks_per_s", "W1 throughput, {W1[n]:,} no-op tasks (tasks/s)", "{:,.0f}", "higher"),
    M("W1", "schedule_us", "W1 schedule() into a running scheduler (µs/call)", "{:.1f}", "lower"),
    M("W2", "p50_ms", "W2 lateness p50, {W2[n]:,} timers over {W2[span]} s (ms)", "{:.2f}",
      "lower"),
    M("W2", "p99_ms", "W2 lateness p99 (ms)", "{:.2f}", "lower"),
    M("W2", "max_ms", "W2 lateness max (ms)", "{:.2f}", "lower"),
    M("W3", "chain_add_s", "W3 chain of {W3[n]:,}: add (s)", "{:.2f}", "lower"),
    M("W3", "chain_run_s", "W3 chain of {W3[n]:,}: run all (s)", "{:.2f}", "lower"),
    M("W3", "chain_add_ratio", "W3 chain add time {W3[n]:,} vs {W3[small]:,} (linear = 4)",
      "{:.1f}", "ideal", False),
    M("W3", "dag_add_s", "W3 random DAG of {W3[n]:,}: add (s)", "{:.2f}", "lower"),
    M("W3", "dag_run_s", "W3 random DAG of {W3[n]:,}: run all (s)", "{:.2f}", "lower"),
    M("W3", "dag_add_ratio", "W3 DAG add time {W3[n]:,} vs {W3[small]:,} (linear = 4)",
      "{:.1f}", "ideal", False),
    M("W3", "shuffled_add_s", "W3 deep DAG of {W3[shuffled]:,} in random order: add (s)",
      "{:.2f}", "lower"),
    M("W3", "shuffled_add_ratio",
      "W3 same, add time {W3[shuffled]:,} vs {W3[shuffled_small]:,} (linear = 4; at most 5)",
      "{:.1f}", "ideal", False),
    M("W4", "bytes_per_task", "W4 memory per pending task, {W45[n]:,} pending (bytes)",
      "{:,.0f}", "lower"),
    M("W4", "us_per_schedule", "W4 schedule() 1 h ahead (µs/call)", "{:.1f}", "lower"),
    M("W5", "us_per_cancel", "W5 cancel() (µs/call)", "{:.1f}", "lower"),
    M("W5", "freed_pct", "W5 memory freed per cancel (% of a pending task)", "{:.0f}%",
      "higher", False),
    M("W5", "held_after_pct",
      "W5 memory held after cancelling {W45[cancel]:,} of {W45[n]:,} (% of before)", "{:.0f}%",
      "lower", False),
    M("W5", "held_after_remove_pct", "W5 same, after also remove()-ing the cancelled (% of before)",
      "{:.0f}%", "lower", False),
    M("W6", "mean_high_position",
      "W6 mean position of {W6[high]} high-priority among {W6[low]:,} low, each due now "
      "(ideal {ideal})", "{:.1f}", "ideal", False),
    M("W6", "mean_high_position_same_due", "W6 same, all sharing one due time (ideal {ideal})",
      "{:.1f}", "ideal", False),
]
# fmt: on


def median_metrics(runs: list[dict]) -> dict:
    """Median of each numeric metric over the runs; a flag is true if any run set it."""
    merged = {}
    for key in runs[0]:
        values = [run[key] for run in runs if run.get(key) is not None]
        if not values:
            merged[key] = None
        elif isinstance(values[0], bool):
            merged[key] = any(values)
        else:
            merged[key] = statistics.median(values)
    return merged


def add_ratios(workloads: dict) -> None:
    """For every peer metric: peer value / Taskloom value (direction per METRICS)."""
    for metric in METRICS:
        if not metric.ratio:
            continue
        by_system = workloads.get(metric.workload, {})
        base = by_system.get(BASELINE, {}).get("median", {}).get(metric.key)
        for system, result in by_system.items():
            value = result.get("median", {}).get(metric.key)
            if system != BASELINE and value is not None and base:
                result.setdefault("vs_taskloom", {})[metric.key] = value / base


def _cell(result: dict | None, metric: str, fmt: str) -> str:
    if result is None:
        return "n/a"
    if "error" in result:
        return "error"
    value = result["median"].get(metric)
    if value is None:
        return "n/a"
    if value < 0 and fmt.format(-value) == fmt.format(0.0):
        value = 0.0  # no "-0%" for a few bytes of noise
    text = fmt.format(value)
    ratio = result.get("vs_taskloom", {}).get(metric)
    if ratio is not None:
        text += f" ({ratio:.2g}×)" if ratio < 10 else f" ({ratio:,.0f}×)"
    if result.get("runs", 0) == 1 and result.get("repeats_wanted", 1) > 1:
        text += " ¹"
    return text


def markdown(results: dict, systems: list[tuple[str, str]]) -> str:
    """The README table: one row per metric, one column per system."""
    sizes = results["sizes"]
    ideal = (sizes["W6"]["high"] + 1) / 2
    header = ["Metric", "better"] + [label for _, label in systems]
    rows = [header, ["---"] * 2 + ["---:"] * len(systems)]
    for metric in METRICS:
        by_system = results["workloads"].get(metric.workload, {})
        if not by_system:
            continue
        direction = {"higher": "↑", "lower": "↓"}.get(metric.better, "ideal")
        row = [metric.label.format(**sizes, ideal=f"{ideal:g}"), direction]
        row += [_cell(by_system.get(name), metric.key, metric.fmt) for name, _ in systems]
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    machine = results["machine"]
    notes = [
        "",
        f"Medians of up to {results['repeats']} runs; (N×) = that system's value / Taskloom's; "
        "n/a = the system has no such feature; ¹ = one run only (slow peer).",
        f"Machine: {machine['nproc']} CPUs ({machine['cpu']}), Python {machine['python']}, "
        f"{machine['platform']}; APScheduler {machine['apscheduler']}; {machine['date']}; "
        f"load average {machine.get('load_avg_1m_at_start')} at start, "
        f"{machine.get('load_avg_1m_at_end')} at end.",
    ]
    notes += [f"{note}" for note in results.get("notes", [])]
    errors = [
        f"- {workload} {system}: {result['error']}"
        for workload, by_system in results["workloads"].items()
        for system, result in by_system.items()
        if "error" in result
    ]
    if errors:
        notes += ["", "Errors:", *errors]
    return "\n".join(lines + notes) + "\n"


def machine_now() -> dict:
    """This machine as a result records it: cores, Python, load, when (UTC)."""
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def write_results(out: Path, stem: str, result: dict, table: str) -> None:
    """``<out>/<stem>.json`` and ``<out>/<stem>.md`` (the table as printed)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / f"{stem}.md").write_text(table + "\n")
