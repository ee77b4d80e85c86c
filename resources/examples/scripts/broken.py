"""A step that always fails, the way a real one does: a message on stderr, exit 2."""

import sys

print("connecting to db.example.invalid ...")
print("error: cannot connect to db.example.invalid: name does not resolve", file=sys.stderr)
sys.exit(2)
