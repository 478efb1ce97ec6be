"""The commit a Python benchmark receipt names, resolved as bench/commit.ts resolves it for the Node benches:
TESSERA_COMMIT when set (the device machine's copy of the tree can carry a stale git HEAD), else .device/commit
(scripts/device-slim.sh writes it before a device call, with +dirty when the tree was), else this checkout's HEAD."""
import os
import subprocess


def receipt_commit():
    if os.environ.get("TESSERA_COMMIT"):
        return os.environ["TESSERA_COMMIT"]
    try:
        with open(".device/commit") as f:
            return f.read().strip()
    except OSError:
        pass
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git checkout; set TESSERA_COMMIT)"
