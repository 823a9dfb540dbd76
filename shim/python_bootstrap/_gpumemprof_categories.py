"""Memory categories (docs/framework-bridge.md, "Categories"): which tensors are parameters,
gradients and optimizer state, and where training phases begin, told to the preloaded shim as facts.
The tools decide every tensor's category from them afterwards; nothing here guesses.

Runs inside the profiled program, so it never raises into it and never changes what it computes:
- from `import torch` on, PyTorch's global module registration hooks note which modules exist (weakly:
  nothing is kept alive) so parameters can be named by their module path;
- once the bridge attached, torch.autograd.backward is wrapped (the wrapper only emits a phase on
  entry and exit of the outermost call) and PyTorch's global optimizer step hooks are registered;
- labels are sent at those phase boundaries, when PyTorch raises out of memory, and at exit: the
  parameters (when the modules changed, or every few seconds), the gradients before each optimizer
  step, the optimizer's state after it. A label binds to the tensor allocation live at its address,
  so one label during a tensor's life is enough: the tools apply it to the whole allocation.
Costs: a few Python calls per module built; per training step, one pass over the gradients and
four phase events. Nothing runs per module call or per tensor operation.
"""

import atexit
import ctypes
import functools
import importlib
import threading
import time
import weakref

# format/event.h: TensorCategory and TrainingPhase.
_PARAMETERS, _GRADIENTS, _OPTIMIZER_STATE = 1, 2, 3
_FORWARD, _BACKWARD, _OPTIMIZER = 1, 2, 3
_PARAMETER_WALK_S = 5.0  # parameters are walked at most this often unless the modules changed

_shim = None
_handles = []  # the hooks to remove if the bridge does not attach
_modules = weakref.WeakSet()  # every module that registered a child, a parameter or a buffer
_module_changes = 0
_lock = threading.Lock()  # the phase counters; the wrappers may run on several threads


class _Walk:
    """What the last parameter walk found: each parameter by id, with a weak reference and its name."""

    def __init__(self):
        self.params = {}  # id(p) -> (weakref to p, name)
        self.module_changes = -1
        self.at = 0.0
        self.on_device = 0  # parameters labelled on a device so far
        self.verified_at = 0.0  # when the gradients and optimizer state were last looked up in full
        self.trusting = False  # this step takes tensors labelled before as still where they were


_walk = _Walk()
_optimizers = weakref.WeakSet()
_seen = {}  # id(tensor) -> (weakref, storage address, category): labelled already
_names = {}  # name -> id in attribution.jsonl
_phase = {"step": 1, "micro": 0, "depth": 0}


def _is(entry, obj):
    """Whether an entry of a table keyed by id(), (weakref, ...), is `obj` itself (not an object
    dead since whose id was reused)."""
    return entry is not None and entry[0]() is obj


def _known(value):
    """Whether a registered module, parameter or buffer was known already: registering it again (a
    ModuleList sliced in every forward, as Hugging Face's models do with their layers) adds nothing
    to label, so it must not make the next parameter walk due."""
    if value is None:
        return True
    try:
        if value in _modules:
            return True
    except TypeError:
        return False
    return _is(_walk.params.get(id(value)), value)


def _note_module(module, name=None, value=None):
    global _module_changes
    try:
        _modules.add(module)
        if not _known(value):
            _module_changes += 1
    except TypeError:
        pass
    return None  # keep what is being registered


def install_registry(torch):
    """At `import torch`: note modules as they are built. Cheap; removed again by disable()."""
    try:
        m = importlib.import_module("torch.nn.modules.module")  # imported by torch, not always its attribute
        for register in ("register_module_module_registration_hook", "register_module_parameter_registration_hook",
                         "register_module_buffer_registration_hook"):
            if hasattr(m, register):
                _handles.append(getattr(m, register)(_note_module))
    except Exception:
        pass


def disable():
    """The bridge did not attach, or categories are off: take every hook back."""
    for h in _handles:
        try:
            h.remove()
        except Exception:
            pass
    _handles.clear()
    _modules.clear()


def _storage(t):
    """(device, storage address, tensor) of a CUDA tensor's storage, or None."""
    try:
        t = getattr(t, "_local_tensor", t)  # a DTensor's shard
        if not getattr(t, "is_cuda", False):
            return None
        address = t.untyped_storage().data_ptr()
        return (t.get_device(), address) if address else None
    except Exception:
        return None


def _name_id(name):
    i = _names.get(name)
    if i is None:
        i = _shim.gpumemprof_framework_name(name.encode("utf-8", "replace"))
        if i:
            _names[name] = i
    return i or 0


class _Labels:
    """Labels of one category, sent in one call."""

    def __init__(self, category):
        self.category, self.addresses, self.devices, self.names = category, [], [], []

    def add(self, tensor, name, trust=False):
        """True when the tensor is on a device (labelled now or before). `trust`: a tensor labelled
        before with this category is taken to be at the same storage without looking it up (the
        lookup is most of a label's cost; see _optimizer_step_begins)."""
        if trust and self.labelled(tensor):
            return True
        where = _storage(tensor)
        if where is None:
            return False
        if self.labelled(tensor) and _seen[id(tensor)][1] == where[1]:  # and at this storage
            return True
        try:
            _seen[id(tensor)] = (weakref.ref(tensor), where[1], self.category)
        except TypeError:
            pass
        self.devices.append(where[0])
        self.addresses.append(where[1])
        self.names.append(_name_id(name))
        return True

    def labelled(self, tensor):
        """This very tensor was labelled with this category before."""
        seen = _seen.get(id(tensor))
        return _is(seen, tensor) and seen[2] == self.category

    def send(self):
        n = len(self.addresses)
        if n:
            _shim.gpumemprof_framework_label(self.category, n, (ctypes.c_uint64 * n)(*self.addresses),
                                             (ctypes.c_int32 * n)(*self.devices), (ctypes.c_uint32 * n)(*self.names))
        if len(_seen) > 4 * max(n, 1024):  # drop the entries of dead tensors now and then
            for key in [k for k, v in _seen.items() if v[0]() is None]:
                del _seen[key]


def _roots():
    children = set()
    modules = list(_modules)
    for m in modules:
        for c in getattr(m, "_modules", {}).values():
            if c is not None:
                children.add(id(c))
    return [m for m in modules if id(m) not in children]


def _label_parameters(force=False):
    """Parameters and buffers of every module tree, by module path, and an optimizer's parameters that
    belong to no module (fp32 master weights): when the modules changed, every few seconds, or forced."""
    now = time.monotonic()
    # Until parameters are on a device (a model built on the CPU, moved after CUDA started), every time.
    if not force and _walk.on_device and _walk.module_changes == _module_changes and now - _walk.at < _PARAMETER_WALK_S:
        return
    _walk.module_changes, _walk.at = _module_changes, now
    labels = _Labels(_PARAMETERS)
    params = {}
    on_device = 0
    for root in _roots():
        for walk in (root.named_parameters, root.named_buffers):
            try:
                for name, t in walk():
                    if t is not None:
                        params.setdefault(id(t), (weakref.ref(t), name))
                        on_device += labels.add(t, name)
            except Exception:
                continue
    for opt in list(_optimizers):
        for g, group in enumerate(getattr(opt, "param_groups", ())):
            for i, p in enumerate(group.get("params", ())):
                if id(p) not in params:
                    name = f"{type(opt).__name__}.param_groups[{g}][{i}]"
                    params[id(p)] = (weakref.ref(p), name)
                    on_device += labels.add(p, name)
    _walk.params = params
    _walk.on_device = on_device
    labels.send()


def _label_gradients(trust=False):
    labels = _Labels(_GRADIENTS)
    for ref, name in _walk.params.values():
        p = ref()
        grad = getattr(p, "grad", None) if p is not None else None
        if grad is not None:
            labels.add(grad, name, trust)
    labels.send()


def _label_optimizer_state(opt, trust=False):
    labels = _Labels(_OPTIMIZER_STATE)
    for p, state in list(getattr(opt, "state", {}).items()):
        if not isinstance(state, dict):
            continue
        known = _walk.params.get(id(p))
        base = known[1] if known is not None else type(opt).__name__ + ".state"
        for key, value in state.items():
            # AdamW's `step` is a CPU tensor: skipped before its name is made, as a labelled one is.
            if getattr(getattr(value, "_local_tensor", value), "is_cuda", False) and not (trust and labels.labelled(value)):
                labels.add(value, f"{base}.{key}")
    labels.send()


def _phase_event(phase):
    """The micro-batch of a backward or an optimizer step is the backward passes so far in the step;
    a forward's is the next one."""
    _shim.gpumemprof_framework_phase(phase, _phase["step"], _phase["micro"] + (phase == _FORWARD))


_said = set()


def _say(what, error):
    """One line in gpumemprof.log per kind of failure: the program never sees it."""
    if what in _said or _shim is None:
        return
    _said.add(what)
    try:
        _shim.gpumemprof_framework_log(f"{what}: {type(error).__name__}: {error}".encode("utf-8", "replace"))
    except Exception:
        pass


_active = True  # set_active(): the benchmark's switch


def set_active(active):
    """For measuring the hooks' cost in one process (tests/gpu/inference_bench.py --alternate hooks):
    False makes every hook return at once, so units of work with and without the hooks' work (labels,
    phase events) can alternate. Switch only between training steps: a step whose backward began
    with the hooks on must end with them on. The categories of a run measured so are not meant to
    be read."""
    global _active
    _active = bool(active)


def _guarded(fn):
    """Our hooks' bodies: whatever fails here stays here (and is said once in the log)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not _active:
            return
        try:
            fn(*args, **kwargs)
        except Exception as e:
            _say(fn.__name__, e)

    return run


@_guarded
def _backward_begins():
    with _lock:
        _phase["depth"] += 1
        if _phase["depth"] != 1:  # a backward inside backward (reentrant checkpointing): one phase
            return
        _phase["micro"] += 1
        _label_parameters()
        _phase_event(_BACKWARD)


@_guarded
def _backward_ends():
    with _lock:
        _phase["depth"] -= 1
        if _phase["depth"] != 0:
            return
        if not _optimizers:  # no optimizer steps to label the gradients before
            _label_gradients()
        _phase_event(_FORWARD)


def _wrap_autograd(fn):
    @functools.wraps(fn)
    def autograd_call(*args, **kwargs):
        _backward_begins()
        try:
            return fn(*args, **kwargs)
        finally:
            _backward_ends()

    autograd_call._gpumemprof_wrapped = fn
    return autograd_call


@_guarded
def _optimizer_step_begins(optimizer, args, kwargs):
    with _lock:
        _optimizers.add(optimizer)
        # A parameter the last walk did not see (the optimizer's first step, a module's Parameter
        # replaced) makes the walk due now: its gradient is named through it.
        _label_parameters(force=any(id(p) not in _walk.params for g in optimizer.param_groups for p in g["params"]))
        # Gradients zeroed in place and the optimizer's state are the same tensors step after step,
        # updated in place: between full lookups (as often as the parameter walk) a tensor labelled
        # before is not looked up again. New tensors (gradients set to None and made again) are
        # labelled each step; a storage swapped under a known tensor is found at the next full
        # lookup, at an OOM or at exit.
        now = time.monotonic()
        _walk.trusting = now - _walk.verified_at < _PARAMETER_WALK_S
        if not _walk.trusting:
            _walk.verified_at = now
        _label_gradients(_walk.trusting)
        _phase_event(_OPTIMIZER)


@_guarded
def _optimizer_step_ends(optimizer, args, kwargs):
    with _lock:
        _label_optimizer_state(optimizer, _walk.trusting)
        _phase["step"] += 1
        _phase["micro"] = 0
        _phase_event(_FORWARD)


@_guarded
def label_all():
    """Everything, now: when PyTorch is out of memory (before the OOM bundle) and at exit."""
    with _lock:
        _label_parameters(force=True)
        _label_gradients()
        for opt in list(_optimizers):
            _label_optimizer_state(opt)


def attach(torch, shim):
    """After the bridge attached: start gathering, unless GPUMEMPROF_CATEGORIES turns it off."""
    global _shim
    _shim = shim
    try:
        shim.gpumemprof_framework_log.argtypes = [ctypes.c_char_p]
        shim.gpumemprof_framework_log.restype = None
        shim.gpumemprof_framework_categories.restype = ctypes.c_int
        shim.gpumemprof_framework_name.argtypes = [ctypes.c_char_p]
        shim.gpumemprof_framework_name.restype = ctypes.c_uint32
        shim.gpumemprof_framework_label.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64),
                                                    ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_uint32)]
        shim.gpumemprof_framework_label.restype = None
        shim.gpumemprof_framework_phase.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
        shim.gpumemprof_framework_phase.restype = None
        if shim.gpumemprof_framework_categories() != 1:
            disable()
            return
        optimizer = importlib.import_module("torch.optim.optimizer")  # torch.optim deletes the name
        _handles.append(optimizer.register_optimizer_step_pre_hook(_optimizer_step_begins))
        _handles.append(optimizer.register_optimizer_step_post_hook(_optimizer_step_ends))
        # backward only (what loss.backward() calls): torch.autograd.grad also serves libraries'
        # internals (torch.autograd.functional, compilers' tracing), whose calls are no training phase.
        if not hasattr(torch.autograd.backward, "_gpumemprof_wrapped"):
            torch.autograd.backward = _wrap_autograd(torch.autograd.backward)
        atexit.register(label_all)
        label_all()
    except Exception as e:
        _say("the category hooks were not installed", e)
        disable()
