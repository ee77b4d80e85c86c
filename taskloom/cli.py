"""The ``taskloom`` command.

    taskloom run FILE [--workers N] [--for DURATION] [--executor threads|processes|dask://H:P]
                      [--task NAME [--with-upstream]] [--dry-run]
    taskloom validate FILE [--json] [--no-import]
    taskloom list FILE [--json]          tasks, triggers, dependencies, next fire times
    taskloom next FILE [-n N] [--json]   the next fire times across tasks
    taskloom history FILE [--json]
    taskloom forecast FILE [--for DURATION] [--json]
    taskloom install-desktop [--uninstall]
    taskloom [FILE | --example NAME] [--start] [--screenshot PNG]  (the window; the start
                                                                   page without a file)
    taskloom --version
    -q/--quiet and -v/--verbose (-vv) before or after the command (logs.py)

Exit codes (README "Exit codes"): 0 ok; 1 a one-shot task did not succeed; 2
invalid input or usage (a bad file, for ``validate`` too; an unusable store, at
open or when writing it fails during the run: the run stops and one line names
the store and the cause); 75 (EX_TEMPFAIL) when another live process already runs
the workflow (its store is owned: the message names the owner); 128 + the signal
when stopped by one (Ctrl-C 130, SIGTERM 143). Recurring tasks (and tasks
downstream of them) run until Ctrl-C or ``--for``; they do not decide the exit
code. Ctrl-C cancels what is running (commands are terminated with their
children) and shuts down cleanly.

Only the window imports Qt, and only when asked for.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import taskloom

if TYPE_CHECKING:
    from taskloom.engine import TaskState

# Exit codes (README, "Exit codes"): a script can tell a failed task from a bad file,
# an interrupt, and a workflow that another process is running right now.
EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
EXIT_BUSY = 75  # EX_TEMPFAIL (sysexits.h): not now, try again when the owner has finished
EXIT_SIGNAL_BASE = 128  # 128 + the signal's number, as shells report: SIGINT 130, SIGTERM 143
SUBCOMMANDS = (
    "run",
    "status",
    "retry",
    "cancel",
    "pause",
    "resume",
    "run-now",
    "clear",
    "validate",
    "history",
    "list",
    "next",
    "forecast",
    "backfill",
    "install-desktop",
    "completion",
    "help",
)
STEERING = ("retry", "cancel", "pause", "resume", "run-now", "clear")
EXAMPLES = ("etl", "flaky", "recurring")  # resources/examples/NAME.toml
SIGNAL_CHECK = 0.2  # seconds between looks for Ctrl-C / SIGTERM while waiting
log = logging.getLogger("taskloom.cli")


# ---------------------------------------------------------------------- arguments
def _duration(text: str) -> float:
    from taskloom.engine.durations import parse_duration

    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return seconds


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def _param(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` -> (KEY in upper case, VALUE): a command sees TASKLOOM_PARAM_KEY."""
    from .params import parse

    try:
        return parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # outside the try: a
    # Ctrl-C while importing would otherwise end in a NameError in the except clause

    try:
        return version("taskloom")
    except PackageNotFoundError:  # running from a source checkout
        return taskloom.__version__


class _VersionAction(argparse.Action):
    """``--version``: the installed version is looked up only when asked for
    (importlib.metadata costs a command that never prints it ~15 ms)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        kwargs.setdefault("help", "show program's version number and exit")
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser, _namespace, _values, _option_string=None):
        print(f"taskloom {_version()}")  # to stdout, as argparse's own "version" action
        parser.exit()


def _output_flag(arg: str) -> bool:
    """-q, -v, -vv, ... --quiet, --verbose: may come before the command word."""
    import re

    return re.fullmatch(r"-q|-v+|--quiet|--verbose", arg) is not None


def _output_options(top: bool) -> argparse.ArgumentParser:
    """-q/-v, accepted before the command and after it (``taskloom -v run F``,
    ``taskloom run F -v``). Only the top level has defaults: a subcommand's would
    overwrite what was given before it."""
    parent = argparse.ArgumentParser(add_help=False)
    default = {} if top else {"default": argparse.SUPPRESS}
    group = parent.add_argument_group("output")
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print only what went wrong (and the data asked for)",
        **({"default": False} if top else default),
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        help="log what Taskloom does (-vv: debug, with tracebacks)",
        **({"default": 0} if top else default),
    )
    return parent


def verbosity(args) -> int:
    """-1 quiet, 0 default, 1 -v, 2 -vv; ``-q`` with ``-v`` is a usage error (caught earlier)."""
    return -1 if args.quiet else min(2, args.verbose or 0)


def _command_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="taskloom", description="Run and check workflows.", parents=[_output_options(True)]
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)
    each = [_output_options(False)]

    run = sub.add_parser("run", help="run a workflow headless, with live progress", parents=each)
    run.add_argument("file", type=Path, nargs="?", help="workflow file (TOML)")
    run.add_argument(
        "--example",
        choices=EXAMPLES,
        help="run a bundled example instead of a file",
    )
    run.add_argument(
        "--until-idle",
        action="store_true",
        help="stop once no one-shot work remains, even if recurring tasks would run on",
    )
    run.add_argument("--workers", type=_positive_int, help="worker threads (default: the file's)")
    run.add_argument(
        "--for",
        dest="run_for",
        type=_duration,
        metavar="DURATION",
        help="stop after this long, e.g. 30s or 5m (recurring workflows run until Ctrl-C)",
    )
    run.add_argument(
        "--executor",
        metavar="threads|processes|dask://HOST:PORT",
        help="where tasks run (default: the file's)",
    )
    run.add_argument(
        "--log-dir",
        type=Path,
        help="where captured output goes (default: beside the run store, old runs' pruned)",
    )
    _store_arguments(run)
    run.add_argument(
        "--fresh",
        action="store_true",
        help="start a new run even if the last one did not finish (default: resume it)",
    )
    run.add_argument(
        "--task",
        dest="tasks",
        action="append",
        metavar="NAME",
        help="run only this task, once and now (repeat for more); in a store of its own",
    )
    run.add_argument(
        "--with-upstream",
        action="store_true",
        help="with --task: also the tasks it depends on, first",
    )
    run.add_argument(
        "--param",
        dest="params",
        action="append",
        type=_param,
        metavar="KEY=VALUE",
        help="tell the run's commands TASKLOOM_PARAM_KEY=VALUE (repeatable); kept with the "
        "run, so a resume gets the same",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="say what would run, in what order; run nothing, write no store",
    )

    _steering_parsers(sub, each)

    backfill = sub.add_parser(
        "backfill",
        help="run the cron and interval occurrences of past days, in order, as one run",
        parents=each,
    )
    backfill.add_argument("file", type=Path, help="workflow file (TOML)")
    backfill.add_argument("--from", dest="first", required=True, metavar="YYYY-MM-DD")
    backfill.add_argument("--to", dest="last", required=True, metavar="YYYY-MM-DD")
    backfill.add_argument(
        "--task",
        dest="names",
        action="append",
        metavar="NAME",
        help="only this recurring task (repeatable; default: every one)",
    )
    backfill.add_argument("--workers", type=_positive_int, help="at a time (default: the file's)")
    _store_arguments(backfill)
    backfill.add_argument(
        "--dry-run", action="store_true", help="list the occurrences, in order; run nothing"
    )

    listing = sub.add_parser(
        "list", help="the tasks of a workflow: trigger, dependencies, next fire", parents=each
    )
    listing.add_argument("file", type=Path, help="workflow file (TOML)")
    _json_argument(listing)

    upcoming = sub.add_parser(
        "next", help="the next fire times across a workflow's tasks", parents=each
    )
    upcoming.add_argument("file", type=Path, help="workflow file (TOML)")
    upcoming.add_argument(
        "-n", dest="count", type=_positive_int, default=10, help="how many (default 10)"
    )
    _json_argument(upcoming)

    history = sub.add_parser(
        "history", help="print the recent runs of a workflow's tasks", parents=each
    )
    history.add_argument("file", type=Path, help="workflow file (TOML)")
    _store_arguments(history)
    history.add_argument("--limit", type=_positive_int, default=30, help="attempts to show")
    _json_argument(history)

    validate = sub.add_parser(
        "validate",
        help="check a workflow file and list every problem",
        description="Check a workflow file and list every problem. By default each "
        "'call' module is imported (which runs its top-level code) to check that it "
        "names a callable; --no-import checks an untrusted file without importing or "
        "running anything.",
        parents=each,
    )
    validate.add_argument("file", type=Path, help="workflow file (TOML)")
    validate.add_argument(
        "--no-import",
        dest="imports",
        action="store_false",
        help="do not import the calls' modules (default: import them, running their "
        "top-level code); nothing in the file is run",
    )
    _json_argument(validate)

    ahead = sub.add_parser(
        "forecast", help="what a run would do: finish, critical path, collisions", parents=each
    )
    ahead.add_argument("file", type=Path, help="workflow file (TOML)")
    ahead.add_argument(
        "--for", dest="horizon", type=_duration, metavar="DURATION", help="look ahead (default 24h)"
    )
    ahead.add_argument("--json", action="store_true", help="print JSON instead of text")
    ahead.add_argument("--workers", type=_positive_int, help="worker threads (default: the file's)")
    ahead.add_argument("--seed", type=int, default=0, help="seed of the sampled passes")
    _store_arguments(ahead)

    from .desktop import add_parser as add_desktop_parser

    add_desktop_parser(sub, parents=each)
    completion = sub.add_parser(
        "completion",
        help="print a shell completion script (bash or zsh)",
        description="Print a completion script made from this command's own options. "
        "bash: 'source <(taskloom completion bash)' in ~/.bashrc; zsh: "
        "'taskloom completion zsh > ~/.zfunc/_taskloom' with ~/.zfunc on $fpath.",
        parents=each,
    )
    completion.add_argument("shell", choices=("bash", "zsh"))
    helping = sub.add_parser(
        "help", help="list the commands, or show one command's help", parents=each
    )
    helping.add_argument("topic", nargs="?", metavar="COMMAND", help="a command")
    return parser


def _steering_parsers(sub, each) -> None:
    """status and the commands that steer a run (steer.py)."""
    status = sub.add_parser(
        "status",
        help="a run now: owner, counts, what runs, what failed, what comes next",
        parents=each,
    )
    status.add_argument("file", type=Path, help="workflow file (TOML)")
    _store_arguments(status)
    _json_argument(status)
    about = {
        "retry": "run failed, skipped or cancelled tasks again (--failed: every failed one)",
        "cancel": "cancel tasks that have not finished",
        "pause": "hold tasks (or, with no TASK, the whole live run)",
        "resume": "undo pause",
        "run-now": "run tasks that wait for their time now",
        "clear": "run finished one-shot tasks again in the same run",
    }
    for word, text in about.items():
        parser = sub.add_parser(
            word,
            help=text,
            description=text[0].upper() + text[1:] + ". Sent to the process that runs the "
            "workflow now, which answers; when none does, applied to the stored run, which "
            "the next 'taskloom run' resumes.",
            parents=each,
        )
        parser.add_argument("file", type=Path, help="workflow file (TOML)")
        parser.add_argument("tasks", nargs="*", metavar="TASK", help="task names")
        if word == "retry":
            parser.add_argument("--failed", action="store_true", help="every failed task")
        if word == "clear":
            parser.add_argument(
                "--downstream",
                action="store_true",
                help="also the finished tasks downstream of them",
            )
        parser.add_argument(
            "--timeout",
            type=_duration,
            default=10.0,
            metavar="DURATION",
            help="how long to wait for a live run's answer (default 10s)",
        )
        _store_arguments(parser)


def _json_argument(parser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document (shape in the README)"
    )


def _store_arguments(parser) -> None:
    parser.add_argument(
        "--db",
        type=Path,
        metavar="PATH",
        help="the run store (default: one per workflow file, in <user data dir>/taskloom/runs)",
    )


def _window_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="taskloom",
        usage="taskloom [FILE | --example NAME] [options]\n       taskloom COMMAND ...",
        description="Open the Taskloom window on a workflow (the start page if none), "
        "or run a COMMAND.",
        epilog=_commands_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[_output_options(True)],
    )
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument("file", nargs="?", type=Path, help="workflow file (TOML)")
    parser.add_argument(
        "--example",
        choices=EXAMPLES,
        help="open a bundled example instead of a file",
    )
    parser.add_argument(
        "--start",
        action="store_true",
        help="start the workflow's schedule at once (default: when you press Start)",
    )
    _store_arguments(parser)
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="start a new run even if the last one did not finish (default: resume it)",
    )
    parser.add_argument("--screenshot", type=Path, metavar="PNG", help="save a picture and exit")
    parser.add_argument(
        "--quit-after", type=float, metavar="SECONDS", help="close the window after this long"
    )
    parser.add_argument(
        "--theme",
        choices=("system", "light", "dark"),
        help="colour theme (default: $TASKLOOM_THEME, else the desktop's)",
    )
    parser.add_argument(
        "--select", metavar="TASK", help="select this task at start (e.g. for --screenshot)"
    )
    return parser


def main(argv=None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C before a run could handle it: no traceback
        return EXIT_SIGNAL_BASE + 2


def _main(argv) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    word = next((arg for arg in argv if not _output_flag(arg)), None)
    if word is not None and word not in SUBCOMMANDS and _mistyped_command(word):
        return EXIT_INVALID
    if word in SUBCOMMANDS:
        parser = _command_parser()
        args, extra = parser.parse_known_args(argv)
        if extra and args.command in STEERING and not any(a.startswith("-") for a in extra):
            args.tasks = [*args.tasks, *extra]  # TASK names after an option: retry F --db D t
        elif extra:  # said with the command's own usage line, as argparse would
            sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
        if args.quiet and args.verbose:
            parser.error("-q/--quiet and -v/--verbose cannot be used together")
        from taskloom import logs

        logs.configure(verbosity(args))  # once, for every command
        try:
            return _command(args)
        except BrokenPipeError:  # `taskloom list FILE | head`: the reader has gone
            # Python would print a traceback at exit when it flushes stdout again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_SIGNAL_BASE + 13  # as a shell reports SIGPIPE (141)
    args = _window_parser().parse_args(argv)
    from taskloom import logs

    logs.configure(verbosity(args))
    return open_window(args)


def _unusable_store(path: Path | None) -> str | None:
    """Why a ``--db`` path can never be a store (its folder is missing or no folder,
    the path is a folder or a device), or None. A store that does not exist yet in
    a folder that does is fine: no runs yet."""
    if path is None:
        return None
    folder = path.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        return f"taskloom: --db {path}: unusable store: the folder {folder} {what}"
    if path.exists() and not path.is_file():
        return f"taskloom: --db {path}: unusable store: not a regular file"
    return None


def _command(args) -> int:
    if args.command != "run":  # run says it when it opens the store (it may make the folder)
        reason = _unusable_store(getattr(args, "db", None))
        if reason is not None:
            print(reason, file=sys.stderr)
            return EXIT_INVALID
    if args.command == "run":
        return run_workflow(args)
    if args.command == "backfill":
        return run_backfill(args)
    if args.command == "history":
        return show_history(args)
    if args.command in ("list", "next"):
        from taskloom import listing

        return listing.main(args)
    if args.command == "forecast":
        from .forecasting import show_forecast

        return show_forecast(args)
    if args.command == "install-desktop":
        from .desktop import main as install_desktop

        return install_desktop(args)
    if args.command == "status":
        from .steer import status

        return status(args)
    if args.command in STEERING:
        from .steer import steer

        return steer(args)
    if args.command == "completion":
        from .completion import script

        print(script(_command_parser(), args.shell, _window_parser()), end="")
        return EXIT_OK
    if args.command == "help":
        return show_help(args.topic)
    return validate_workflow(args.file, quiet=args.quiet, as_json=args.json, imports=args.imports)


def command_summaries() -> list[tuple[str, str]]:
    """(command, one-line summary) for every command, from the parser itself."""
    parser = _command_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [(choice.dest, choice.help or "") for choice in sub._choices_actions]


def _commands_text() -> str:
    rows = command_summaries()
    width = max(len(name) for name, _ in rows)
    lines = ["commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, text in rows]
    lines.append("")
    lines.append("'taskloom help COMMAND' or 'taskloom COMMAND --help' tells more about one.")
    return "\n".join(lines)


def show_help(topic: str | None) -> int:
    if topic is None:
        _window_parser().print_help()
        return EXIT_OK
    if topic not in SUBCOMMANDS:
        print(f"taskloom help: no command {topic!r} (see 'taskloom help')", file=sys.stderr)
        return EXIT_INVALID
    _command_parser().parse_args([topic, "--help"])  # prints it and exits 0
    return EXIT_OK


def _mistyped_command(word: str) -> bool:
    """A word that is no file but close to a command ("histroy"): say which one was
    meant rather than open the window on a file that does not exist."""
    import difflib

    if word.startswith("-") or Path(word).exists():
        return False
    close = difflib.get_close_matches(word, SUBCOMMANDS, n=1, cutoff=0.6)
    if not close:
        return False
    print(
        f"taskloom: {word!r} is not a taskloom command nor a file; did you mean {close[0]!r}?",
        file=sys.stderr,
    )
    return True


# ---------------------------------------------------------------------- validate, window
def validate_workflow(
    path: Path, quiet: bool = False, as_json: bool = False, imports: bool = True
) -> int:
    """``taskloom validate``: with ``imports`` (the default) each call's module is
    imported, running its top-level code; without, nothing of the file is run."""
    from taskloom.engine.workflow import WorkflowError, load

    if as_json:
        from taskloom import listing

        return listing.validate_json(path, imports)
    try:
        workflow = load(path)
    except WorkflowError as exc:
        if exc.unreadable:  # nothing was checked: one line, like a usage error
            print(exc, file=sys.stderr)
            return EXIT_INVALID
        return _print_problems(path, exc.problems)
    from taskloom.imports import call_problems

    problems = call_problems(workflow) if imports else []  # each call imports, beside the file
    if problems:
        return _print_problems(path, problems)
    if not quiet:
        print(f"{path} is valid ({len(workflow.tasks)} tasks)")
    return EXIT_OK


def _print_problems(path: Path, problems) -> int:
    from taskloom.listing import located

    for _problem, text in located(path, problems):  # each with its line:column
        print(text)
    count = len(problems)
    print(f"{path}: {count} problem{'s' if count != 1 else ''}", file=sys.stderr)
    return EXIT_INVALID


def open_window(args) -> int:
    from taskloom.app import run_window  # Qt loads only for the window

    if args.file is not None and args.example:
        print("taskloom: give a FILE or --example, not both", file=sys.stderr)
        return EXIT_INVALID
    path = taskloom.example_path(args.example) if args.example else args.file
    if path is None and (args.start or args.select):
        print("taskloom: --start and --select need a FILE or --example", file=sys.stderr)
        return EXIT_INVALID
    result = run_window(
        path,
        screenshot=args.screenshot,
        quit_after=args.quit_after,
        db=args.db,
        fresh=args.fresh,
        theme=args.theme,
        select=args.select,
        start=args.start,
    )
    return int(result or 0)


# ---------------------------------------------------------------------- history
def show_history(args) -> int:
    from datetime import datetime

    from taskloom.engine.workflow import WorkflowError, load

    from .runs import default_db_path

    try:
        workflow = load(args.file)
    except WorkflowError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    name = workflow.name
    db_path = args.db or default_db_path(workflow)
    if not db_path.exists():
        if args.json:
            from taskloom.listing import history_json

            history_json(workflow, db_path, [])
        elif not args.quiet:
            print(f"no runs of {name} yet ({db_path} does not exist)")
        return EXIT_OK
    from taskloom.engine.store import SQLiteStore, StoreError  # only for a store there is

    try:
        store = SQLiteStore.reader(db_path)  # a run may be going on: read beside it
    except StoreError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    try:
        rows = store.attempts(limit=args.limit)
        labels = store.run_labels()  # backfills: runs not the workflow's own
    except StoreError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    finally:
        store.close()
    if args.json:
        from taskloom.listing import history_json

        history_json(workflow, db_path, rows, labels)
        return EXIT_OK
    if not rows:
        if not args.quiet:
            print(f"no runs of {name} yet")
        return EXIT_OK
    from taskloom import human

    header = f"{'started':19}  {'run':>3}  {'task':<18} {'try':>3}  {'outcome':<9} {'took':>11}"
    for run in sorted({row["run"] for row in rows} & set(labels)):
        print(f"run {run}: {labels[run]}")
    print(header + "  detail")
    for row in reversed(rows):
        started = datetime.fromtimestamp(row["started"]).strftime("%Y-%m-%d %H:%M:%S")
        took = "" if row["ended"] is None else human.duration(row["ended"] - row["started"])
        detail = row["error"] or ""
        if row["exit_code"] is not None and not detail:
            detail = f"exit code {row['exit_code']}"
        print(
            f"{started}  {row['run']:>3}  {row['task_id']:<18} {row['number']:>3}  "
            f"{row['outcome']:<9} {took:>11}  {detail}"
        )
    return EXIT_OK


# ---------------------------------------------------------------------- run
def build_executor(spec: str, workers: int):
    """None for the engine's own threads, else a ``concurrent.futures.Executor``."""
    from .owner import build_executor

    return build_executor(spec, workers)


def counted_tasks(workflow) -> list[str]:
    """The one-shot tasks that decide the exit code: not recurring, not downstream of one."""
    repeating: set[str] = set()
    for tid in workflow.order():
        task = workflow.tasks[tid]
        if task.recurring or any(dep in repeating for dep in task.deps):
            repeating.add(tid)
    return [tid for tid in workflow.tasks if tid not in repeating]


def run_workflow(args) -> int:
    # From the start, a stop signal is noted, not raised: the run stops at the next
    # look (before the store opens, once it has, or while waiting), never half-way
    # through opening a store or starting the engine (issue 21: Ctrl-C in the first
    # 0.4 s was a traceback).
    stop_signals = StopSignals()
    stop_signals.install()
    try:
        return _run_workflow(args, stop_signals)
    except KeyboardInterrupt:  # a signal the handler raised, or one before it was installed
        return EXIT_SIGNAL_BASE + stop_signals.signal_number


def run_backfill(args) -> int:
    """``taskloom backfill``: the occurrences of past days (taskloom/backfill.py) as
    one run of the workflow's store, labelled "backfill FROM to TO": ``history``,
    ``status`` and the window show it; ``taskloom run`` never resumes it, the same
    ``taskloom backfill`` command does (``runs.open_run``'s ``label``)."""
    from taskloom import backfill

    try:
        first, last = backfill.parse_day(args.first), backfill.parse_day(args.last)
    except backfill.BackfillError as exc:
        print(f"taskloom backfill: {exc}", file=sys.stderr)
        return EXIT_INVALID
    make = lambda workflow: backfill.backfill_workflow(workflow, first, last, args.names or ())  # noqa: E731
    if args.dry_run:
        from taskloom.engine.workflow import WorkflowError, load

        try:
            made = make(load(args.file))
        except WorkflowError as exc:
            print(exc, file=sys.stderr)
            return EXIT_INVALID
        except backfill.BackfillError as exc:
            print(f"taskloom backfill: {exc}", file=sys.stderr)
            return EXIT_INVALID
        count = len(made.tasks)
        print(f"dry run of {made.name}: would run {count} occurrences from {first} to {last}, "
              "in this order (nothing is run):")  # fmt: skip
        print("\n".join(backfill.describe(made)))
        return EXIT_OK
    run_args = argparse.Namespace(**vars(args))
    run_args.__dict__.update(
        example=None, until_idle=False, run_for=None, executor=None, log_dir=None,
        fresh=False, tasks=None, with_upstream=False, params=None, dry_run=False,
        transform=make, label=backfill.label(first, last, args.names or ()),
    )  # fmt: skip
    return run_workflow(run_args)


def _run_workflow(args, stop_signals: StopSignals) -> int:
    from taskloom.engine.store import StoreBusy, StoreError
    from taskloom.engine.workflow import WorkflowError, load

    from .runs import default_db_path

    if (args.file is None) == (args.example is None):
        print("taskloom run: give a FILE or --example NAME (one of them)", file=sys.stderr)
        return EXIT_INVALID
    if args.example:  # the bundled copy, wherever the package was installed
        args.file = taskloom.example_path(args.example)
    try:
        workflow = load(args.file)
    except WorkflowError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    transform = getattr(args, "transform", None)  # taskloom backfill's occurrences
    if transform is not None:
        try:
            workflow = transform(workflow)
        except ValueError as exc:
            print(f"taskloom backfill: {exc}", file=sys.stderr)
            return EXIT_INVALID
    if stop_signals.reason is not None:
        return EXIT_SIGNAL_BASE + stop_signals.signal_number
    if args.with_upstream and not args.tasks:
        print("taskloom run: --with-upstream needs --task NAME", file=sys.stderr)
        return EXIT_INVALID
    db_path = args.db or default_db_path(workflow)  # a backfill's too: a labelled run
    if args.tasks:
        from taskloom import plan

        try:
            workflow = plan.select(workflow, args.tasks, args.with_upstream)
        except KeyError as exc:
            known = ", ".join(workflow.tasks)
            print(f"{args.file}: no task {exc.args[0]!r} (it has: {known})", file=sys.stderr)
            return EXIT_INVALID
        # A store of its own: a task run neither resumes nor disturbs the workflow's run.
        db_path = args.db or db_path.with_name(db_path.stem + ".tasks.db")
    params: dict[str, str] | None = None
    if args.params:
        params = {}
        for key, value in args.params:
            if key in params and params[key] != value:
                print(f"taskloom run: --param {key} is given twice", file=sys.stderr)
                return EXIT_INVALID
            params[key] = value
    if args.dry_run:
        return dry_run(workflow, db_path, selected=bool(args.tasks))
    from .runs import take_secrets

    problem = take_secrets(workflow)  # secret_env: read now, masked in output, never stored
    if problem is not None:
        print(problem, file=sys.stderr)
        return EXIT_INVALID
    from taskloom import places

    try:
        retention = places.retention()
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    # Logs live beside the workflow's store, per workflow, pruned with its old runs;
    # the folder is made once the store opened (a store's own problem is named first).
    log_dir = args.log_dir or places.log_dir_for(db_path)
    workers = args.workers or workflow.workers
    try:
        executor = build_executor(args.executor or workflow.executor, workers)
    except (ValueError, OSError) as exc:
        print(f"{args.file}: {exc}", file=sys.stderr)
        return EXIT_INVALID
    from taskloom.imports import use_workflow_folder

    use_workflow_folder(workflow, executor)  # a call's module may sit beside the file
    from .owner import open_owned_run

    try:
        owned = open_owned_run(
            workflow,
            db_path,
            log_dir=log_dir,
            fresh=args.fresh or bool(args.tasks),
            params=params,
            lock_kind="tasks" if args.tasks else "workflow",
            label=getattr(args, "label", None),  # taskloom backfill's run
            workers=workers,
            executor=executor,
        )
    except (StoreError, ValueError, KeyError, TypeError) as exc:
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        if isinstance(exc, StoreBusy):
            print(f"taskloom: {exc}; not starting a second run", file=sys.stderr)
            return EXIT_BUSY
        # a store that cannot be used, or e.g. an 'at' the engine refuses
        print(exc if isinstance(exc, StoreError) else f"{args.file}: {exc}", file=sys.stderr)
        return EXIT_INVALID
    opened = owned.opened
    scheduler = opened.scheduler
    if stop_signals.reason is not None:  # stopped while the store opened: nothing ran yet
        _stop(scheduler, executor)
        opened.store.close()
        return EXIT_SIGNAL_BASE + stop_signals.signal_number
    from taskloom import logs
    from taskloom.engine.store import UnsafeFile, private_folder

    try:
        private_folder(log_dir, "log folder")  # 0700, ours: others can plant nothing there
        logs.check_file(log_dir / "taskloom.log")  # written from once the commands run
    except (OSError, UnsafeFile) as exc:
        why = exc if isinstance(exc, UnsafeFile) else f"cannot make the log folder {log_dir}: {exc}"
        print(f"taskloom: {why}", file=sys.stderr)
        _stop(scheduler, executor)
        opened.store.close()
        return EXIT_INVALID
    # Subscribed before the engine starts, so that neither misses an event; the
    # monitor holds its lines until the report exists, and the feed's thread starts
    # once the first commands have (docs/cli.md 7, "Quick to answer").
    monitor = RunMonitor(workflow, counted_tasks(workflow))
    scheduler.subscribe(monitor.on_event)
    owned.attach()  # the feed for windows that watch this run, the workflow's hooks
    hooks = owned.hooks
    monitor.on_output_lost = stop_signals.output_lost
    monitor.seed(scheduler.tasks())
    deadline = None
    try:
        scheduler.start()
        from .runs import start_deadline

        deadline = start_deadline(workflow, scheduler, opened.store, hooks)  # [workflow] timeout
    except (ValueError, KeyError, TypeError) as exc:  # e.g. an 'at' the engine refuses
        with _report(args, scheduler, monitor) as reporter:
            reporter.note(opened.note)
            monitor.release()
            reporter.note(f"{args.file}: {exc}")
        _stop(scheduler, executor)
        if hooks is not None:
            hooks.close(wait=0)
        owned.close_parts()
        opened.store.close()
        return EXIT_INVALID
    # What can wait until the first commands run: rich's panel, the log file, the
    # feed's thread, pruning old runs, the pruner.
    from taskloom import logs

    interrupted = False
    store_error = None
    reporter = None
    shut = False

    def shut_down() -> None:  # once: running commands stop, then feed, pruner, store
        nonlocal shut, store_error
        if shut:
            return
        shut = True
        stop_signals.armed = False
        if deadline is not None:
            deadline.stop()
        store_error = _stop(scheduler, executor)
        if hooks is not None:  # on_finish runs while the summary is printed
            expired = deadline is not None and deadline.expired
            hooks.finish("failed" if expired else _run_outcome(monitor, interrupted, store_error))
        owned.close_parts()  # watchers learn that the owner stopped; the pruner stops
        opened.store.close()

    def should_stop() -> bool:  # a failed store stops the engine: stop waiting too
        return stop_signals.should_stop() or opened.store.failed

    def stopping(reporter) -> None:
        nonlocal interrupted
        if stop_signals.reason is not None or not opened.store.failed:
            interrupted = True
            reason = stop_signals.reason or "interrupted"
            reporter.note(f"{reason}: stopping running tasks (the run can be resumed)...")

    try:
        reporter = _report(args, scheduler, monitor)
        with reporter:
            reporter.note(opened.note)
            adopted = scheduler.adopted_tasks()
            if adopted:  # the previous owner died; its commands went on under their supervisor
                reporter.note(
                    f"adopted {len(adopted)} command{'s' if len(adopted) > 1 else ''} the "
                    f"previous owner left running: {', '.join(adopted)}"
                )
            monitor.release()  # the lines held since the start, then each as it comes
            logs.log_to_file(log_dir / "taskloom.log")
            log.info("store %s, task logs in %s, %d workers", db_path, log_dir, workers)
            # The feed's thread, old runs pruned with their logs, the attempt pruner.
            owned.settle(retention)

            def on_idle() -> None:  # once: only recurring tasks are left to run
                reporter.note(waiting_line(scheduler, workflow, args.until_idle))

            try:
                stop_signals.armed = True  # now a signal may interrupt the wait at once
                if stop_signals.reason is not None:  # came while the report was set up
                    raise KeyboardInterrupt
                monitor.wait(
                    args.run_for,
                    stop=should_stop,
                    until_idle=args.until_idle,
                    on_idle=on_idle,
                    over=None if deadline is None else lambda: deadline.expired,
                )
            except KeyboardInterrupt:
                stopping(reporter)
            finally:
                shut_down()
    except KeyboardInterrupt:  # a signal while the report was being set up
        if reporter is None:
            reporter = QuietReport(monitor) if args.quiet else PlainReport(monitor)
        monitor.release()  # the run's last lines are told, held ones first
        stopping(reporter)
        shut_down()
    except BaseException:
        shut_down()
        raise
    if store_error is not None:
        # One line on stderr: -q's summary would add a line per task the failure failed.
        if not args.quiet:
            reporter.summary(scheduler, log_dir, interrupted)
        print(f"taskloom: {store_error}; the run stopped", file=sys.stderr)
        return EXIT_INVALID
    code = reporter.summary(scheduler, log_dir, interrupted)
    if deadline is not None and deadline.expired:
        print(f"taskloom: {deadline.reason}; cancelled what was unfinished", file=sys.stderr)
        code = EXIT_FAILED
    if hooks is not None:
        try:
            if not hooks.close():
                log.warning("hooks: still running at exit")
        except KeyboardInterrupt:  # a signal while waiting for on_finish: do not wait more
            log.warning("hooks: interrupted while on_finish ran")
            return EXIT_SIGNAL_BASE + stop_signals.signal_number
    if opened.store.close_problem is not None:  # e.g. the folder was made read-only
        print(f"taskloom: {opened.store.close_problem}", file=sys.stderr)
    if interrupted:  # stopped from outside, whatever the tasks did: 128 + the signal
        return EXIT_SIGNAL_BASE + stop_signals.signal_number
    return code


def _run_outcome(monitor, interrupted: bool, store_error) -> str:
    """What on_finish is told: succeeded, failed (a counted task did not succeed, or
    the store failed), unfinished (--for ran out first) or interrupted."""
    from taskloom.engine import TaskState

    if interrupted:
        return "interrupted"
    if store_error is not None:
        return "failed"
    if monitor.exit_code() == EXIT_OK:
        return "succeeded"
    if any(monitor.states.get(tid) is TaskState.FAILED for tid in monitor.counted):
        return "failed"
    return "unfinished"


def _report(args, scheduler, monitor: RunMonitor):
    """How the run is shown: nothing but failures (-q), a live panel on a terminal,
    else one line per event."""
    if args.quiet:
        return QuietReport(monitor)
    if sys.stdout.isatty():
        return LiveReport(scheduler, monitor)
    return PlainReport(monitor)


def dry_run(workflow, db_path: Path, selected: bool) -> int:
    """What ``run`` would do: the tasks in the order the engine gets them, and what
    starts each. Nothing runs and no store is opened or written."""
    from taskloom import plan

    order = plan.run_order(workflow)
    what = "the selected tasks, once and now" if selected else f"{len(order)} tasks"
    print(f"dry run of {workflow.name}: would run {what}, in this order (nothing is run):")
    width = max(len(tid) for tid, _ in order)
    for number, (tid, when) in enumerate(order, 1):
        task = workflow.tasks[tid]
        after = f"; needs {', '.join(task.deps)}" if task.deps else ""
        print(f"{number:>3}. {tid:<{width}}  {when}{after}")
    print(f"store: {db_path} (not opened)")
    return EXIT_OK


class StopSignals:
    """Ctrl-C, SIGTERM (a service manager), SIGHUP (the terminal closed, ssh dropped)
    and SIGQUIT all stop the run the same way: running commands are terminated with
    their process groups and the run is left resumable. Once stopping, more signals
    (a third impatient Ctrl-C) are noted, not obeyed: giving up half-way would leave
    commands running. A reader of our output that went away (``| head -2``) stops
    the run like a SIGPIPE would, without a traceback."""

    NAMES = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")

    def __init__(self):
        self.reason: str | None = None
        self.signal_number = 2  # SIGINT: a KeyboardInterrupt that no handler of ours raised
        # Raise KeyboardInterrupt at the signal (only while waiting for the run); else
        # the signal is noted and the run looks at ``reason`` when it can stop cleanly.
        self.armed = False

    def install(self) -> None:
        import signal

        if threading.current_thread() is not threading.main_thread():
            return
        for name in self.NAMES:
            number = getattr(signal, name, None)
            if number is not None:
                signal.signal(number, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        import signal

        name = signal.Signals(signum).name
        if self.reason is not None:
            return  # already stopping
        if signum == signal.SIGHUP:  # the terminal is gone: writing to it would fail
            _silence_output()
        self.reason = f"interrupted by {name}"
        self.signal_number = int(signum)
        if self.armed:
            raise KeyboardInterrupt

    def should_stop(self) -> bool:
        """Looked at while waiting: a signal came, or our reader went away unnoticed
        (no line was written since ``| head -2`` exited)."""
        if self.reason is None and _output_closed(sys.stdout):
            self.output_lost()
        return self.reason is not None

    def output_lost(self) -> None:
        """Called from any thread when stdout is gone: the run stops at the next look."""
        _silence_output()
        if self.reason is None:
            self.reason = "interrupted: the output was closed"
            self.signal_number = 13  # SIGPIPE, which a reader going away means


def _output_closed(stream) -> bool:
    """Whether the reader of ``stream`` (a pipe or terminal) has gone: the kernel
    flags the write end with POLLERR or POLLHUP."""
    import select

    try:
        poller = select.poll()
        poller.register(stream.fileno(), 0)  # no events asked: only errors and hang-ups
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll() here, or not a real file
        return False


def _silence_output() -> None:
    """Point stdout and stderr at /dev/null: their reader (a pipe, a terminal) is gone,
    and every later write, the summary included, must not fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):
            pass
    os.close(devnull)


def _stop(scheduler, executor):
    """Stop running tasks (commands are terminated) and shut down. Returns the
    ``StoreError`` that stopped the run, if writing its store failed.

    Interrupted attempts leave their tasks READY in the store, so the next
    ``taskloom run`` of the file resumes the run instead of starting over.
    """
    from taskloom.engine.store import StoreError

    failure = None
    try:
        scheduler.shutdown(wait=True, cancel_running=True)
    except StoreError as exc:
        failure = exc
    finally:
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
    return failure


class RunMonitor:
    """Follows the engine's events: latest state per task, and when the run is done."""

    def __init__(self, workflow, counted: list[str]):
        self.workflow = workflow
        self.counted = set(counted)
        self.recurring = len(counted) < len(workflow.tasks)
        from taskloom.engine.fold import TaskFold

        # The run's one fold of events (engine/fold.py); ``states`` is its task id ->
        # TaskState, read only.
        self.fold = TaskFold()
        self.states: dict[str, TaskState] = self.fold.states
        self.errors: dict[str, str] = {}
        self.started = time.monotonic()
        self.listeners: list = []
        # called when a listener cannot write any more
        self.on_output_lost: Callable[[], None] | None = None
        # Events (with their elapsed time) held for the listeners until ``release()``:
        # the engine starts before the report is set up.
        self._held: list | None = []
        self._hold_lock = threading.Lock()
        self._all_settled = threading.Event()
        if not self.counted:
            self._all_settled.set()

    def seed(self, infos) -> None:
        """Start from the states a resumed run restored (no event tells of them)."""
        for info in infos:
            if info.id not in self.states:
                self.fold.put(info)
            if info.error:
                self.errors.setdefault(info.id, info.error)
        if all(tid in self.states and self.states[tid].settled for tid in self.counted):
            self._all_settled.set()

    def on_event(self, event) -> None:
        self.fold.apply(event)
        if event.error:
            self.errors[event.task_id] = event.error
        elapsed = self.elapsed()
        with self._hold_lock:
            if self._held is not None:  # the report is not there yet: told at release()
                self._held.append((event, elapsed))
            else:
                self._tell(event, elapsed)  # first: the event's line comes before what it ends
        if all(tid in self.states and self.states[tid].settled for tid in self.counted):
            self._all_settled.set()

    def release(self) -> None:
        """Give the listeners the events held so far, then each as it comes."""
        with self._hold_lock:
            held, self._held = self._held or [], None
            for event, elapsed in held:
                self._tell(event, elapsed)

    def _tell(self, event, elapsed: float) -> None:
        for listener in self.listeners:
            try:
                listener(event, elapsed)
            except OSError:  # a closed pipe or a vanished terminal
                if self.on_output_lost is not None:
                    self.on_output_lost()

    def wait(
        self, run_for: float | None, stop=None, until_idle: bool = False, on_idle=None, over=None
    ) -> None:
        """Until the one-shot tasks settle (no recurring ones) or ``run_for`` passes.
        With recurring tasks, ``on_idle()`` is called once when every one-shot task
        has settled, and ``until_idle`` returns then. Raises ``KeyboardInterrupt``
        once ``stop()`` says so (output lost); returns once ``over()`` says so (the
        run's deadline passed)."""
        deadline = None if run_for is None else time.monotonic() + run_for
        never = threading.Event()  # a recurring workflow runs until Ctrl-C or the deadline
        told = False
        while True:
            settled = self._all_settled.is_set()
            if settled and not self.recurring:
                return
            if settled and not told:
                told = True
                if on_idle is not None:
                    on_idle()
                if until_idle:
                    return
            if stop is not None and stop():
                raise KeyboardInterrupt
            if over is not None and over():
                return
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return
            # Wake now and then: a signal that the kernel hands to another thread only
            # reaches Python's handler once the main thread runs again.
            waiter = never if told else self._all_settled
            waiter.wait(SIGNAL_CHECK if remaining is None else min(SIGNAL_CHECK, remaining))

    @property
    def idle(self) -> bool:
        """Recurring tasks only are left: every one-shot task has settled."""
        return self.recurring and self._all_settled.is_set()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def exit_code(self) -> int:
        from taskloom.engine import TaskState

        ok = all(self.states.get(tid) is TaskState.SUCCEEDED for tid in self.counted)
        return EXIT_OK if ok else EXIT_FAILED


def waiting_line(scheduler, workflow, stopping: bool = False) -> str:
    """What a run with only recurring tasks left waits for: "waiting for recurring
    tasks: next backup at 02:30 (Asia/Tokyo), in 20 h 18 min; Ctrl-C to stop"."""
    from taskloom import human

    try:
        entries, now = scheduler.upcoming(100), scheduler.clock.now()
    except RuntimeError:
        entries, now = [], 0.0
    nxt = next((e for e in entries if e.task_id in workflow.tasks), None)
    coming = ""
    if nxt is not None:
        task = workflow.tasks[nxt.task_id]
        zone = (task.timezone or "UTC") if task.cron else None
        when = human.clock_time(time.time() + (nxt.run_at - now), zone)
        ahead = human.duration(nxt.run_at - now)
        coming = f"next {nxt.task_id} at {when}, in {ahead}"
    if stopping:
        stop = "every one-shot task has settled; stopping (--until-idle)"
        if nxt is None:
            return stop
        return f"{stop}; {nxt.task_id} would next run at {when}, in {ahead}"
    if not coming:
        return "waiting for recurring tasks; Ctrl-C to stop"
    return f"waiting for recurring tasks: {coming}; Ctrl-C to stop"


def _event_line(event, elapsed: float) -> str:
    text = f"{elapsed:7.2f}s  {event.task_id:<16} {event.kind}"
    if event.attempt:
        text += f" (attempt {event.attempt})"
    if event.error:
        text += f": {event.error}"
    return text


class PlainReport:
    """One line per event, for logs and pipes."""

    def __init__(self, monitor: RunMonitor):
        self.monitor = monitor
        monitor.listeners.append(self.on_event)

    def __enter__(self):
        workflow = self.monitor.workflow
        self._print(f"running {workflow.name}: {len(workflow.tasks)} tasks")
        return self

    def __exit__(self, *exc):
        return False

    def _print(self, text: str) -> None:
        try:
            print(text, flush=True)
        except OSError:  # the reader went away (| head -2): stop, do not crash
            if self.monitor.on_output_lost is not None:
                self.monitor.on_output_lost()

    def on_event(self, event, elapsed: float) -> None:
        self._print(_event_line(event, elapsed))

    def note(self, text: str) -> None:
        self._print(text)

    def summary(self, scheduler, log_dir: Path, interrupted: bool) -> int:
        for line in _summary_lines(scheduler, self.monitor, log_dir):
            self._print(line)
        return self.monitor.exit_code()


class QuietReport(PlainReport):
    """-q: nothing while it runs, nothing when all went well; what failed (and the
    log to read) goes to stderr."""

    def __enter__(self):
        return self

    def on_event(self, event, elapsed: float) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def summary(self, scheduler, log_dir: Path, interrupted: bool) -> int:
        lines = _summary_lines(scheduler, self.monitor, log_dir)
        failed = [line.strip() for line in lines[1:-1]]
        try:
            for line in failed:
                print(f"taskloom: {line}", file=sys.stderr)
        except OSError:
            pass
        return self.monitor.exit_code()


def _summary_lines(scheduler, monitor: RunMonitor, log_dir: Path) -> list[str]:
    from taskloom.engine import TaskState

    counts: dict[str, int] = {}
    for state in monitor.states.values():
        counts[state.value] = counts.get(state.value, 0) + 1
    text = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    from taskloom import human

    lines = [f"{monitor.workflow.name}: {text} in {human.duration(monitor.elapsed())}"]
    for tid in monitor.workflow.tasks:
        if monitor.states.get(tid) is not TaskState.FAILED:
            continue
        lines.append(f"  FAILED {tid}: {monitor.errors.get(tid, '')}")
        try:
            attempts = scheduler.attempts(tid)
        except (KeyError, RuntimeError):
            attempts = []
        if attempts and attempts[-1].log_path:
            lines.append(f"         log: {attempts[-1].log_path}")
    lines.append(f"logs: {log_dir}")
    return lines


class LiveReport:
    """A live panel on a terminal: progress, counts per state, what is next, failures."""

    def __init__(self, scheduler, monitor: RunMonitor):
        from rich.console import Console
        from rich.live import Live

        self.scheduler = scheduler
        self.monitor = monitor
        self.console = Console()
        self.live = Live(console=self.console, get_renderable=self.render, refresh_per_second=8)
        monitor.listeners.append(self.on_event)

    def __enter__(self):
        self.live.start()
        return self

    def __exit__(self, *exc):
        self.live.stop()
        return False

    def on_event(self, event, elapsed: float) -> None:
        # Outcomes scroll above the panel; every other change only redraws it.
        styles = {"succeeded": "green", "failed": "bold red", "retry_wait": "yellow"}
        if event.kind in styles or event.kind in ("skipped", "cancelled"):
            style = styles.get(event.kind, "dim")
            line = _event_line(event, elapsed)
            self.console.print(line, style=style, markup=False, highlight=False)

    def note(self, text: str) -> None:
        self.console.print(text, style="bold")

    def render(self):
        from rich.console import Group, RenderableType
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        from taskloom import human
        from taskloom.engine import TaskState

        monitor = self.monitor
        counted = monitor.counted
        settled = sum(1 for t in counted if t in monitor.states and monitor.states[t].settled)
        header = Table.grid(padding=(0, 1))
        header.add_row(
            Text(monitor.workflow.name, style="bold"),
            ProgressBar(total=max(1, len(counted)), completed=settled, width=30),
            Text(f"{settled}/{len(counted)} done  {human.duration(monitor.elapsed())}"),
        )
        counts: dict[str, int] = {}
        for state in monitor.states.values():
            counts[state.value] = counts.get(state.value, 0) + 1
        states = Text("  ".join(f"{name} {n}" for name, n in sorted(counts.items())))
        parts: list[RenderableType] = [header, states]
        try:
            upcoming = self.scheduler.upcoming(5)
            now = self.scheduler.clock.now()
        except RuntimeError:
            upcoming, now = [], 0.0
        if upcoming:
            table = Table("next", "in", "kind", box=None, padding=(0, 2), header_style="dim")
            for entry in upcoming:
                table.add_row(entry.task_id, human.duration(entry.run_at - now), entry.kind)
            parts.append(table)
        if monitor.idle:
            parts.append(Text("waiting for recurring tasks; Ctrl-C to stop", style="dim"))
        running = [tid for tid, state in monitor.states.items() if state is TaskState.RUNNING]
        if running:
            parts.append(Text("running: " + ", ".join(running), style="cyan"))
        for tid, error in monitor.errors.items():
            if monitor.states.get(tid) is TaskState.FAILED:
                parts.append(Text(f"failed {tid}: {error}", style="red"))
        return Group(*parts)

    def summary(self, scheduler, log_dir: Path, interrupted: bool) -> int:
        for line in _summary_lines(scheduler, self.monitor, log_dir):
            self.console.print(line, markup=False, highlight=False)
        return self.monitor.exit_code()
