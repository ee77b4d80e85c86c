"""``python -m taskloom`` is the ``taskloom`` command."""

from taskloom.cli import main

raise SystemExit(main())
