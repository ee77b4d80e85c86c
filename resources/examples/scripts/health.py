"""A health check: prints the load average and free disk space, fails if the disk is full."""

import os
import shutil
import sys

load1, _, _ = os.getloadavg()
disk = shutil.disk_usage("/")
free = disk.free / disk.total
print(f"health: load {load1:.2f}, disk {free:.0%} free")
if free < 0.01:
    print("health: disk almost full", file=sys.stderr)
    sys.exit(1)
