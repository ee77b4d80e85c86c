"""One pipeline step: prints progress while it "works" for the given seconds.

usage: step.py NAME SECONDS
"""

import sys
import time

name, seconds = sys.argv[1], float(sys.argv[2])
parts = 4
for part in range(1, parts + 1):
    time.sleep(seconds / parts)
    print(f"{name}: {part * 100 // parts}% done", flush=True)
print(f"{name}: finished", flush=True)
