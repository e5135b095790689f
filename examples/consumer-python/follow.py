#!/usr/bin/env python3
"""Reads this pod's node from the mounted npu-fault status (/config/fault.json).

How to read a node (docs/contract.md section 5.3, the same rules as the SDK and
`npu-fault status`): a listed node is as bad as the worst status its summary counts; a node
in `unobserved` has not reported yet; any other node is healthy, unless the document says it
left nodes out (`ingest_degraded`, `omitted_nodes`): then it is unknown, never healthy.

The volume refreshes with the kubelet's sync (about a minute), so polling every few seconds
is plenty. Standard library only.
"""
import json
import os
import sys
import time
from datetime import datetime, timezone

PATH = os.environ.get("FAULT_JSON", "/config/fault.json")
STALE_AFTER_S = 180  # the mirror is rewritten every 10 s, the volume about every minute


def read(path):
    with open(path, encoding="utf-8") as f:  # follows the kubelet's ..data symlink
        doc = json.load(f)
    if str(doc.get("version", "")).split(".")[0] != "3":
        raise ValueError(f"fault.json version {doc.get('version')!r} is not 3.x")
    return doc


def leaves_nodes_out(doc):
    """True when the document left out nodes that may not be healthy."""
    return "ingest_degraded" in doc or doc.get("omitted_nodes", 0) > 0


def worst_counted(summary):
    for status in ("failed", "unknown", "degraded"):
        if summary.get(status, 0) > 0:
            return status
    return "healthy"


def node_health(doc, node):
    """failed, unknown, degraded, healthy or unobserved."""
    entry = doc.get("nodes", {}).get(node)
    if entry is not None:
        worst = worst_counted(entry["summary"])
        if worst == "healthy" and (entry.get("agent") != "ok" or not entry.get("npus")):
            return "unknown"  # listed for its agent or another overlay
        return worst
    if node in doc.get("unobserved", []):
        return "unobserved"
    return "unknown" if leaves_nodes_out(doc) else "healthy"


def failed_devices(doc, node):
    entry = doc.get("nodes", {}).get(node) or {}
    return [d["id"] for d in entry.get("npus", []) if d.get("status") == "failed"]


def describe(doc, node):
    health = node_health(doc, node)
    failed = failed_devices(doc, node)
    return f"{health}: {', '.join(failed)}" if failed else health


def main():
    if len(sys.argv) == 3:  # follow.py <fault.json> <node>: print the node's state once
        print(describe(read(sys.argv[1]), sys.argv[2]))
        return
    node = os.environ["NODE_NAME"]
    last = None
    while True:
        try:
            doc = read(PATH)
        except (OSError, ValueError) as error:  # missing or partial: keep the last state
            print(f"status unavailable: {error}", file=sys.stderr)
            time.sleep(5)
            continue
        state = describe(doc, node)
        published = datetime.fromisoformat(doc["timestamp"].replace("Z", "+00:00"))
        age = (datetime.now(timezone.utc) - published).total_seconds()
        if age > STALE_AFTER_S:
            state += f" (stale: published {age:.0f} s ago)"
        if state != last:
            print(f"node {node}: {state}", flush=True)
            last = state
        time.sleep(5)


if __name__ == "__main__":
    main()
