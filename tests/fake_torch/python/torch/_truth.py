"""The fake's own ledger of memory categories: the ground truth the category tests compare the
profiler with (README.md, "Memory categories"). Not a PyTorch API.

Every storage the fake allocates gets a record (its requested bytes, where and when it was
allocated and freed); the phase is "backward" inside torch.autograd.backward/grad, "optimizer"
inside an optimizer's step, "forward" otherwise. A record's category is decided once the run is
over, because some depend on the future (an activation is a tensor of the forward still alive when
the next backward begins), in this order:
  parameters      registered with a module (register_parameter, register_buffer)
  gradients       set as some tensor's .grad
  optimizer_state found in an optimizer's .state after its step
  kv_cache        allocated from transformers/cache_utils.py
  activations     allocated in the forward phase and alive when the next backward begins
  temporaries     allocated and freed in the same phase (no phase change in between)
  other           the rest
summary() replays the allocations and frees with those categories for the peak. The ledger holds
no tensor: only numbers."""
import os
import sys

CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations", "temporaries", "kv_cache",
              "other")
_ROLE_ORDER = ("parameters", "gradients", "optimizer_state")


class _Record:
    __slots__ = ("nbytes", "roles", "kv", "alloc_phase", "alloc_seq", "free_seq", "backwards_at_alloc",
                 "activation", "live")

    def __init__(self, nbytes, kv):
        self.nbytes, self.roles, self.kv = nbytes, set(), kv
        self.alloc_phase, self.alloc_seq, self.free_seq = phase(), _state.seq, None
        self.backwards_at_alloc, self.activation, self.live = _state.backwards, False, True

    def category(self):
        for role in _ROLE_ORDER:
            if role in self.roles:
                return role
        if self.kv:
            return "kv_cache"
        if self.activation:
            return "activations"
        if self.free_seq is not None and self.free_seq == self.alloc_seq:
            return "temporaries"
        return "other"


class _State:
    def __init__(self):
        self.records = []  # by id
        self.events = []  # (record id, context) for an allocation, (record id, None) for a free
        self.seq = 0  # bumped at every phase change
        self.backward_depth = self.optimizer_depth = 0
        self.backwards = 0  # backward calls begun, all told
        self.steps_done = 0  # optimizer steps completed
        self.backwards_since_step = 0


_state = _State()


def phase():
    if _state.backward_depth:
        return "backward"
    return "optimizer" if _state.optimizer_depth else "forward"


def context():
    """(phase, step, micro_batch) now: step counts the optimizer steps completed, plus one;
    micro_batch the backward calls begun since the last step, plus one in the forward phase."""
    p = phase()
    return p, _state.steps_done + 1, _state.backwards_since_step + (1 if p == "forward" else 0)


_cache_utils = os.sep + os.path.join("transformers", "cache_utils.py")
_torch_dir = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _allocating_file():
    """The Python file that asked for the tensor: the first frame outside this torch package."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_torch_dir):
        frame = frame.f_back
    return "" if frame is None else frame.f_code.co_filename


def allocated(nbytes):
    record = _Record(nbytes, _allocating_file().endswith(_cache_utils))
    _state.records.append(record)
    rid = len(_state.records) - 1
    _state.events.append((rid, context()))
    return rid


def freed(rid):
    record = _state.records[rid]
    record.live, record.free_seq = False, _state.seq
    _state.events.append((rid, None))


def mark(storage, role):
    """role: "parameters", "gradients" or "optimizer_state"."""
    _state.records[storage._rid].roles.add(role)


def backward_begin():
    _state.backward_depth += 1
    if _state.backward_depth > 1:
        return
    _state.seq += 1
    _state.backwards_since_step += 1
    for record in _state.records:
        if record.live and record.alloc_phase == "forward" and record.backwards_at_alloc == _state.backwards:
            record.activation = True
    _state.backwards += 1


def backward_end():
    _state.backward_depth -= 1
    if _state.backward_depth == 0:
        _state.seq += 1


def step_begin():
    _state.optimizer_depth += 1
    if _state.optimizer_depth == 1:
        _state.seq += 1


def step_end(completed):
    _state.optimizer_depth -= 1
    if _state.optimizer_depth == 0:
        _state.seq += 1
        if completed:
            _state.steps_done += 1
            _state.backwards_since_step = 0


def _zero():
    return {c: 0 for c in CATEGORIES}


def summary():
    """{"at_exit": bytes by category of the live storages, "peak": the most bytes live at once
    (the first time it was reached), its phase, step, micro_batch and bytes by category}."""
    at_exit = _zero()
    for record in _state.records:
        if record.live:
            at_exit[record.category()] += record.nbytes
    live, total = _zero(), 0
    peak = {"bytes": 0, "phase": "forward", "step": 1, "micro_batch": 1, "by_category": _zero()}
    for rid, ctx in _state.events:
        record = _state.records[rid]
        sign = 1 if ctx is not None else -1
        live[record.category()] += sign * record.nbytes
        total += sign * record.nbytes
        if ctx is not None and total > peak["bytes"]:
            peak = {"bytes": total, "phase": ctx[0], "step": ctx[1], "micro_batch": ctx[2],
                    "by_category": dict(live)}
    return {"at_exit": at_exit, "peak": peak}
