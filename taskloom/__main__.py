"""``python -m taskloom`` is the ``taskloom`` command.

``python -m`` puts the current folder first on ``sys.path``; started in a
workflow's folder, a ``logging.py`` or ``uuid.py`` there would replace the
standard library's in Taskloom's own process. So it goes, before anything else
is imported (like ``python -P``); a workflow's ``call`` modules are found through
the folder ``imports.use_workflow_folder`` appends.
"""

import os
import sys

if sys.path and sys.path[0] in ("", ".", os.getcwd()):
    del sys.path[0]

try:
    from taskloom.cli import main

    code = main()
except KeyboardInterrupt:  # Ctrl-C while the command itself was still loading
    code = 130
raise SystemExit(code)
