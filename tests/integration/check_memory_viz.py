#!/usr/bin/env python3
"""Checks a `gpumemprof export --format memory-viz` file the way PyTorch's memory viewer reads it.

usage: check_memory_viz.py FILE [--suffix]

- Only the pickle opcodes the viewer's own unpickler (MemoryViz.js) knows, protocol 2 to 4; the
  file loads with pickle.load.
- The structure of torch.cuda.memory._snapshot(): segments with their blocks, device_traces.
- Blocks tile their segment in address order (the viewer places each block after the previous).
- Each device's trace, replayed forward from nothing, ends exactly in `segments` (the viewer
  replays it backwards from there), never puts a block outside a segment nor frees what is not
  there. With --suffix (an export of the latest entries only, or of a window), the trace is
  undone from `segments` instead, last entry first, as the viewer does: each entry must undo onto
  the state it left (whole segments only: no segment_map or segment_unmap).

Prints one JSON line: {"segments": N, "entries": [per device], "actions": {...},
"allocated": {device: requested bytes of live blocks}, "reserved": {device: segment bytes},
"frames": {"addr:action": [[filename, line, name], ...]} for the first entry of each address},
"layout": [[device, address, total_size, is_expandable, segment_type, [[state, size, requested], ...]]]},
or the problems found and exit status 1.
"""
import json
import pickle
import pickletools
import sys

VIEWER_OPCODES = {
    "PROTO", "FRAME", "MEMOIZE", "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET", "MARK",
    "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "DICT", "LIST", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "SETITEM", "SETITEMS", "APPEND", "APPENDS", "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT",
    "SHORT_BINUNICODE", "BINUNICODE", "NONE", "NEWTRUE", "NEWFALSE", "STOP",
}
SEGMENT_KEYS = {"device", "address", "total_size", "allocated_size", "active_size", "requested_size", "stream",
                "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"}
BLOCK_KEYS = {"address", "size", "requested_size", "state", "frames"}
ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "oom"}
ACTIVE = ("active_allocated", "active_pending_free")

problems = []


def check(cond, what):
    if not cond:
        problems.append(what)
    return cond


PUSHES_ONE = {"BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "SHORT_BINUNICODE", "BINUNICODE", "NONE",
              "NEWTRUE", "NEWFALSE", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "BINGET", "LONG_BINGET"}


def check_opcodes(data):
    """The viewer's opcodes only, and batches it can take: it appends a batch as the arguments of one
    JavaScript call, so no APPENDS or SETITEMS may carry more than CPython's 1000 items."""
    height, marks = 0, []
    for op, arg, _ in pickletools.genops(data):
        if not check(op.name in VIEWER_OPCODES, f"opcode {op.name} is not one the viewer reads"):
            return
        if op.name == "PROTO":
            check(2 <= arg <= 4, f"protocol {arg}")
        elif op.name in PUSHES_ONE:
            height += 1
        elif op.name == "MARK":
            marks.append(height)
        elif op.name in ("APPENDS", "SETITEMS", "TUPLE"):
            mark = marks.pop()
            items = height - mark
            check(items <= (2000 if op.name == "SETITEMS" else 1000), f"{op.name} of {items} items")
            height = mark + (1 if op.name == "TUPLE" else 0)


def check_frames(frames, where):
    if not check(isinstance(frames, list), f"{where}: frames is not a list"):
        return
    for f in frames:
        check(isinstance(f, dict) and set(f) == {"filename", "line", "name"}, f"{where}: frame {f!r}")
        check(isinstance(f["filename"], str) and isinstance(f["line"], int) and isinstance(f["name"], str),
              f"{where}: frame types {f!r}")


def final_state(segments):
    """Per device: {address: [size, stream, expandable]} and {block address: (requested, pending)}."""
    segs, blocks = {}, {}
    for i, s in enumerate(segments):
        where = f"segment {i}"
        if not check(set(s) == SEGMENT_KEYS, f"{where}: keys {sorted(s)}"):
            continue
        check(s["segment_type"] in ("large", "small"), f"{where}: segment_type {s['segment_type']!r}")
        check(s["segment_pool_id"] == (0, 0), f"{where}: segment_pool_id {s['segment_pool_id']!r}")
        check(isinstance(s["is_expandable"], bool), f"{where}: is_expandable")
        check_frames(s["frames"], where)
        segs.setdefault(s["device"], {})[s["address"]] = [s["total_size"], s["stream"], s["is_expandable"]]
        addr = s["address"]
        allocated = active = requested = 0
        for j, b in enumerate(s["blocks"]):
            bwhere = f"{where} block {j}"
            if not check(set(b) == BLOCK_KEYS, f"{bwhere}: keys {sorted(b)}"):
                continue
            check(b["address"] == addr, f"{bwhere}: address {b['address']:#x}, the blocks before end at {addr:#x}")
            check(b["size"] > 0, f"{bwhere}: size 0")
            check(b["state"] in ACTIVE + ("inactive",), f"{bwhere}: state {b['state']!r}")
            check_frames(b["frames"], bwhere)
            if b["state"] in ACTIVE:
                check(b["requested_size"] <= b["size"], f"{bwhere}: requested_size above size")
                blocks.setdefault(s["device"], {})[addr] = (b["requested_size"], b["state"] == ACTIVE[1])
                active += b["size"]
                requested += b["requested_size"]
                allocated += b["size"] if b["state"] == ACTIVE[0] else 0
            addr += b["size"]
        check(addr == s["address"] + s["total_size"], f"{where}: blocks cover {addr - s['address']} of "
              f"{s['total_size']} bytes")
        check((s["allocated_size"], s["active_size"], s["requested_size"]) == (allocated, active, requested),
              f"{where}: allocated/active/requested sizes do not add up from its blocks")
    return segs, blocks


def containing(segs, addr):
    for start, (size, _, _) in segs.items():
        if start <= addr < start + size:
            return start
    return None


def replay(device, trace, stats):
    """The trace forward from nothing: segments as the viewer keeps them, blocks by address."""
    segs, blocks = {}, {}
    first_frames = stats["frames"]
    for i, e in enumerate(trace):
        where = f"device {device} entry {i} ({e.get('action')})"
        check("category" not in e, f"{where}: has a category")
        action = e.get("action")
        if not check(action in ACTIONS, f"{where}: unknown action"):
            continue
        stats["actions"][action] = stats["actions"].get(action, 0) + 1
        keys = {"action", "size", "stream", "time_us", "frames"} | ({"device_free"} if action == "oom" else {"addr"})
        if not check(set(e) == keys, f"{where}: keys {sorted(e)}"):
            continue
        check_frames(e["frames"], where)
        if action == "oom":
            continue
        addr, size = e["addr"], e["size"]
        first_frames.setdefault(f"{addr}:{action}", [[f["filename"], f["line"], f["name"]] for f in e["frames"]])
        if action in ("segment_alloc", "segment_map"):
            overlap = [s for s, (n, _, _) in segs.items() if s < addr + size and addr < s + n]
            check(size > 0 and not overlap, f"{where}: segment overlaps {overlap}")
            segs[addr] = [size, e["stream"], action == "segment_map"]
            if action == "segment_map":  # joins adjacent mapped ranges of its stream
                nxt = segs.get(addr + size)
                if nxt and nxt[2] and nxt[1] == e["stream"]:
                    segs[addr][0] += nxt[0]
                    del segs[addr + size]
                prev = [s for s, (n, st, x) in segs.items() if s + n == addr and x and st == e["stream"]]
                if prev:
                    segs[prev[0]][0] += segs.pop(addr)[0]
        elif action in ("segment_free", "segment_unmap"):
            start = containing(segs, addr)
            if not check(start is not None, f"{where}: no segment at {addr:#x}"):
                continue
            n, stream, expandable = segs[start]
            inside = [b for b in blocks if addr <= b < addr + size]
            check(not inside, f"{where}: live blocks {inside} in the released range")
            if action == "segment_free":
                check(start == addr and n == size and not expandable, f"{where}: not a whole segment")
                del segs[start]
                continue
            check(expandable and addr + size <= start + n, f"{where}: not inside one expandable segment")
            del segs[start]
            if start < addr:
                segs[start] = [addr - start, stream, True]
            if addr + size < start + n:
                segs[addr + size] = [start + n - addr - size, stream, True]
        elif action == "alloc":
            start = containing(segs, addr)
            check(start is not None and addr + size <= start + segs[start][0], f"{where}: block outside segments")
            check(addr not in blocks, f"{where}: a block is live at {addr:#x}")
            blocks[addr] = [size, False]
        elif action == "free_requested":
            if check(addr in blocks and not blocks[addr][1], f"{where}: no block awaiting a free at {addr:#x}"):
                blocks[addr][1] = True
                check(blocks[addr][0] == size, f"{where}: size {size} is not the block's")
        elif action == "free_completed":
            if check(addr in blocks and blocks[addr][1], f"{where}: free_completed without free_requested"):
                check(blocks.pop(addr)[0] == size, f"{where}: size {size} is not the block's")
    return segs, {a: (n, pending) for a, (n, pending) in blocks.items()}


def undo(device, trace, final_segs, final_blocks, stats):
    """The trace undone from the snapshot's state, last entry first: the viewer's own replay."""
    segs = {a: list(v) for a, v in final_segs.items()}
    blocks = {a: [n, pending] for a, (n, pending) in final_blocks.items()}
    for i in reversed(range(len(trace))):
        e = trace[i]
        where = f"device {device} entry {i} ({e.get('action')})"
        action = e.get("action")
        if not check(action in ACTIONS and action not in ("segment_map", "segment_unmap"), f"{where}: action"):
            continue
        stats["actions"][action] = stats["actions"].get(action, 0) + 1
        if action == "oom":
            continue
        addr, size = e["addr"], e["size"]
        if action == "alloc":
            if check(addr in blocks and not blocks[addr][1], f"{where}: no live block at {addr:#x} to undo"):
                check(blocks.pop(addr)[0] == size, f"{where}: size {size} is not the block's")
        elif action == "free_requested":
            if check(addr in blocks and blocks[addr][1], f"{where}: no block awaiting a free at {addr:#x}"):
                blocks[addr][1] = False
        elif action == "free_completed":
            start = containing(segs, addr)
            check(addr not in blocks, f"{where}: a block is live at {addr:#x}")
            check(start is not None and addr + size <= start + segs[start][0], f"{where}: block outside segments")
            blocks[addr] = [size, True]
        elif action == "segment_alloc":
            inside = [b for b in blocks if addr <= b < addr + size]
            check(segs.get(addr, [0])[0] == size and not inside, f"{where}: no empty segment of {size} at {addr:#x}")
            segs.pop(addr, None)
        elif action == "segment_free":
            overlap = [a for a, (n, _, _) in segs.items() if a < addr + size and addr < a + n]
            check(not overlap, f"{where}: segment overlaps {overlap}")
            segs[addr] = [size, e["stream"], False]
    return segs, blocks


def main():
    suffix = "--suffix" in sys.argv[2:]
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    check_opcodes(data)
    snap = pickle.loads(data)
    if not check(isinstance(snap, dict) and set(snap) == {"segments", "device_traces", "allocator_settings"},
                 f"top-level keys {sorted(snap) if isinstance(snap, dict) else type(snap)}"):
        print("\n".join(problems))
        return 1
    final_segs, final_blocks = final_state(snap["segments"])
    stats = {"segments": len(snap["segments"]), "entries": [], "actions": {}, "allocated": {}, "reserved": {},
             "frames": {}, "layout": [[s["device"], s["address"], s["total_size"], s["is_expandable"],
                                        s["segment_type"], [[b["state"], b["size"], b["requested_size"]]
                                                            for b in s["blocks"]]] for s in snap["segments"]]}
    devices = set(final_segs) | set(range(len(snap["device_traces"])))
    check(all(0 <= d < len(snap["device_traces"]) for d in final_segs), "a segment's device has no trace list")
    for device in sorted(devices):
        trace = snap["device_traces"][device] if device < len(snap["device_traces"]) else []
        stats["entries"].append(len(trace))
        if suffix:
            undo(device, trace, final_segs.get(device, {}), final_blocks.get(device, {}), stats)
        else:
            segs, blocks = replay(device, trace, stats)
            check(segs == final_segs.get(device, {}), f"device {device}: replayed segments {segs} are not the "
                  f"snapshot's {final_segs.get(device, {})}")
            check(blocks == final_blocks.get(device, {}), f"device {device}: replayed blocks {blocks} are not the "
                  f"snapshot's {final_blocks.get(device, {})}")
        stats["allocated"][device] = sum(n for n, _ in final_blocks.get(device, {}).values())
        stats["reserved"][device] = sum(s[0] for s in final_segs.get(device, {}).values())
    if problems:
        print("\n".join(problems[:50]))
        return 1
    print(json.dumps(stats, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
