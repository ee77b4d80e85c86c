"""Commands the way people run them: ``taskloom run FILE`` with a real store.

    python -m benchmarks.commands_bench [--quick] [--other PYTHON]

For each workload (``true`` commands, ``sleep 0.005`` commands; 4 workers, no
dependencies) it runs ``taskloom run`` on a generated workflow file and reports:
commands per second (wall time of the whole ``taskloom run``, start-up included),
the owner process's own CPU per 1,000 commands (user + system of the process
itself, read from /proc while it runs: not its children), and the CPU of the
owner's supervisor per 1,000 commands where there is one.

``--other PYTHON`` runs the same workloads with another interpreter (the previous
main's virtualenv) interleaved with this one, so both columns come from one run of
a noisy machine, and prints the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
TICKS = os.sysconf("SC_CLK_TCK")

WORKLOADS = {"true": ["true"], "sleep_5ms": ["sleep", "0.005"]}


def _cpu_seconds(pid: int) -> float | None:
    """utime + stime of process ``pid`` itself (fields 14 and 15 of its stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


def _supervisors_of(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(a.endswith(b"supervisor.py") for a in argv) and str(pid).encode() in argv:
                found.append(int(name))
    return found


def _workflow(folder: Path, argv: list[str], count: int) -> Path:
    lines = ['[workflow]\nname = "bench"\nworkers = 4\n']
    for i in range(count):
        lines.append(f"[tasks.t{i:05d}]\ncommand = {json.dumps(argv)}\n")
    path = folder / "bench.toml"
    path.write_text("\n".join(lines))
    return path


def run_once(python: str, workload: str, count: int) -> dict:
    """One ``taskloom run`` of ``count`` commands; its rate and CPU."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = _workflow(folder, WORKLOADS[workload], count)
        env = {**os.environ, "XDG_DATA_HOME": str(folder / "data")}
        env.pop("TASKLOOM_OWNER", None)
        argv = [python, "-m", "taskloom", "run", str(path), "--db", str(folder / "run.db"), "-q"]
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=folder, stdout=subprocess.DEVNULL)
        last = {"owner": 0.0, "supervisor": 0.0}
        seen: set[int] = set()

        def sample() -> None:  # the last reading before exit is within 20 ms of the end
            while proc.poll() is None:
                owner = _cpu_seconds(proc.pid)
                if owner is not None:
                    last["owner"] = owner
                seen.update(_supervisors_of(proc.pid) if len(seen) == 0 else ())
                for pid in seen:
                    cpu = _cpu_seconds(pid)
                    if cpu is not None:
                        last["supervisor"] = cpu
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        proc.wait()
        elapsed = time.perf_counter() - started
        sampler.join()
        if proc.returncode != 0:
            raise RuntimeError(f"{argv} exited {proc.returncode}")
    return {
        "per_second": count / elapsed,
        "owner_cpu_per_1000": last["owner"] * 1000 / count,
        "supervisor_cpu_per_1000": last["supervisor"] * 1000 / count,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small run of each")
    parser.add_argument("--other", help="another interpreter (the previous main's venv)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    count = 40 if args.quick else 1000
    pythons = {"now": sys.executable}
    if args.other:
        pythons = {"before": args.other, **pythons}
    results: dict = {}
    for workload in WORKLOADS:
        runs: dict[str, list[dict]] = {name: [] for name in pythons}
        for _ in range(repeats):
            for name, python in pythons.items():  # interleaved: the machine's noise is shared
                runs[name].append(run_once(python, workload, count))
        results[workload] = {
            name: {key: statistics.median(r[key] for r in rs) for key in rs[0]}
            for name, rs in runs.items()
        }
    print(
        f"{'workload':<10} {'column':<7} {'cmds/s':>8} {'owner CPU/1k':>13} {'supervisor/1k':>14}"
    )
    for workload, columns in results.items():
        for name, row in columns.items():
            owner_ms = row["owner_cpu_per_1000"] * 1000
            supervisor_ms = row["supervisor_cpu_per_1000"] * 1000
            print(
                f"{workload:<10} {name:<7} {row['per_second']:>8.0f} "
                f"{owner_ms:>10.0f} ms {supervisor_ms:>11.0f} ms"
            )
        if "before" in columns:
            before, now = columns["before"], columns["now"]
            print(
                f"{workload:<10} ratio   {now['per_second'] / before['per_second']:>8.2f} "
                f"{now['owner_cpu_per_1000'] / before['owner_cpu_per_1000']:>13.2f}"
            )
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "commands.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
