#!/usr/bin/env python3
"""Checks a `gpumemprof export --format telemetry-v2` file against the TelemetryEvent v2 rules of
the Python gpumemprof package (its docs/telemetry_schema.md and schemas/telemetry_event_v2.schema.json),
without needing that package or jsonschema.

usage: validate_telemetry_v2.py FILE
Prints `ok N` (N records) and exits 0, or prints one line per problem (at most 20) and exits 1.
"""
import json
import sys

REQUIRED = (
    "schema_version", "timestamp_ns", "event_type", "collector", "sampling_interval_ms", "pid",
    "host", "device_id", "allocator_allocated_bytes", "allocator_reserved_bytes",
    "allocator_active_bytes", "allocator_inactive_bytes", "allocator_change_bytes",
    "device_used_bytes", "device_free_bytes", "device_total_bytes", "context", "metadata",
)
OPTIONAL = ("job_id", "rank", "local_rank", "world_size")


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)  # JSON true is not an integer here


def check(rec):
    """Yields the problems of one record."""
    if not isinstance(rec, dict):
        yield "not an object"
        return
    for name in REQUIRED:
        if name not in rec:
            yield f"missing {name}"
    unknown = sorted(set(rec) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        yield f"unknown fields {unknown}"
    if any(name not in rec for name in REQUIRED):
        return
    problems = []

    def integer(name, minimum=None, nullable=False):
        v = rec[name]
        if v is None and nullable:
            return None
        if not is_int(v):
            problems.append(f"{name} must be an integer{' or null' if nullable else ''}, got {v!r}")
            return None
        if minimum is not None and v < minimum:
            problems.append(f"{name} must be >= {minimum}, got {v}")
        return v

    def string(name, nullable=False):
        v = rec[name]
        if v is None and nullable:
            return
        if not isinstance(v, str) or (not nullable and not v.strip()):
            problems.append(f"{name} must be a non-empty string, got {v!r}")

    if rec["schema_version"] != 2 or not is_int(rec["schema_version"]):
        problems.append(f"schema_version must be 2, got {rec['schema_version']!r}")
    integer("timestamp_ns", 0)
    string("event_type")
    string("collector")
    integer("sampling_interval_ms", 0)
    integer("pid", -1)
    string("host")
    integer("device_id")
    integer("allocator_allocated_bytes", 0)
    integer("allocator_reserved_bytes", 0)
    integer("allocator_active_bytes", 0, nullable=True)
    integer("allocator_inactive_bytes", 0, nullable=True)
    integer("allocator_change_bytes")
    used = integer("device_used_bytes", 0)
    free = integer("device_free_bytes", 0, nullable=True)
    total = integer("device_total_bytes", 0, nullable=True)
    if total is not None and used is not None and used > total:
        problems.append(f"device_used_bytes {used} exceeds device_total_bytes {total}")
    if total is not None and free is not None and free > total:
        problems.append(f"device_free_bytes {free} exceeds device_total_bytes {total}")
    string("context", nullable=True)
    if not isinstance(rec["metadata"], dict):
        problems.append("metadata must be an object")

    # Distributed identity: optional, but consistent when present (defaults job_id null, rank 0,
    # local_rank = rank, world_size 1).
    job_id = rec.get("job_id")
    if job_id is not None and (not isinstance(job_id, str) or not job_id.strip()):
        problems.append(f"job_id must be a non-empty string or null, got {job_id!r}")
    rank = rec.get("rank", 0)
    local_rank = rec.get("local_rank", rank)
    world_size = rec.get("world_size", 1)
    if not (is_int(rank) and rank >= 0):
        problems.append(f"rank must be an integer >= 0, got {rank!r}")
    elif not (is_int(local_rank) and local_rank >= 0):
        problems.append(f"local_rank must be an integer >= 0, got {local_rank!r}")
    elif not (is_int(world_size) and world_size >= 1):
        problems.append(f"world_size must be an integer >= 1, got {world_size!r}")
    elif rank >= world_size or local_rank >= world_size:
        problems.append(f"rank {rank} and local_rank {local_rank} must be below world_size {world_size}")
    yield from problems


def records_of(payload):
    """The loader's rule: a JSON array, or an object with an `events` list."""
    if isinstance(payload, list):
        return payload
    if isinstance(payload, dict) and isinstance(payload.get("events"), list):
        return payload["events"]
    raise ValueError("payload is neither an array nor an object with an events list")


def main():
    if len(sys.argv) != 2:
        print("usage: validate_telemetry_v2.py FILE", file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        records = records_of(json.load(f))
    problems = []
    for i, rec in enumerate(records):
        problems.extend(f"record {i}: {p}" for p in check(rec))
    for p in problems[:20]:
        print(p)
    if problems:
        return 1
    print(f"ok {len(records)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
