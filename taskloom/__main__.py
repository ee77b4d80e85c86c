"""``python -m taskloom`` is the ``taskloom`` command."""

try:
    from taskloom.cli import main

    code = main()
except KeyboardInterrupt:  # Ctrl-C while the command itself was still loading
    code = 130
raise SystemExit(code)
