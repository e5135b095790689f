#!/usr/bin/env python3
"""Reads this pod's node from the mounted npu-fault status (/config/fault.json).

A node absent from `nodes` is healthy. The volume refreshes with the kubelet's sync (about a
minute), so polling every few seconds is plenty. Standard library only.
"""
import json
import os
import sys
import time
from datetime import datetime, timezone

PATH = os.environ.get("FAULT_JSON", "/config/fault.json")
NODE = os.environ["NODE_NAME"]
STALE_AFTER_S = 180  # the mirror is rewritten every 10 s, the volume about every minute


def read():
    with open(PATH, encoding="utf-8") as f:  # follows the kubelet's ..data symlink
        doc = json.load(f)
    if str(doc.get("version", "")).split(".")[0] != "3":
        raise ValueError(f"fault.json version {doc.get('version')!r} is not 3.x")
    return doc


def main():
    last = None
    while True:
        try:
            doc = read()
        except (OSError, ValueError) as error:  # missing or partial: keep the last state
            print(f"status unavailable: {error}", file=sys.stderr)
            time.sleep(5)
            continue
        entry = doc.get("nodes", {}).get(NODE)  # absent: healthy
        failed = [d["id"] for d in (entry or {}).get("npus", []) if d.get("status") == "failed"]
        age = (datetime.now(timezone.utc) - datetime.fromisoformat(doc["timestamp"].replace("Z", "+00:00"))).total_seconds()
        state = ("failed: " + ", ".join(failed)) if failed else ("listed" if entry else "healthy")
        if age > STALE_AFTER_S:
            state += f" (stale: published {age:.0f} s ago)"
        if state != last:
            print(f"node {NODE}: {state}", flush=True)
            last = state
        time.sleep(5)


if __name__ == "__main__":
    main()
