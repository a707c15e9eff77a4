"""What superoptimize returns, callable on tensors: numpy arrays or torch CPU tensors (the CPU
JIT), or torch CUDA tensors (the CUDA code for the result's GPU target, on torch's current
stream)."""
from . import _mugraph

# mugraph dtype -> (numpy dtype name or None, torch dtype attribute name)
_DTYPES = {"f16": ("float16", "float16"), "bf16": (None, "bfloat16"), "f32": ("float32", "float32")}


def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _describe(x):
    if _is_torch(x):
        return "torch tensor %s %s on %s" % (tuple(x.shape), str(x.dtype).replace("torch.", ""),
                                             x.device)
    if hasattr(x, "__array_interface__"):
        return "numpy array %s %s" % (tuple(x.shape), x.dtype)
    return type(x).__name__


def _pointer(x, spec, index):
    """The data pointer of argument `x` for graph input `spec` (name, dtype, shape, strides),
    after checking its kind, device, dtype, shape and layout; a mugraph.Error names the input
    and what was expected otherwise."""
    name, dtype, shape, strides = spec
    want = "%s %s[%s]" % (name, dtype, ", ".join(str(d) for d in shape))
    where = "input %d ('%s')" % (index, name)
    np_name, torch_name = _DTYPES[dtype]
    if _is_torch(x):
        import torch
        if x.device.type not in ("cpu", "cuda"):
            raise _mugraph.Error("%s: a %s; expected a CPU or CUDA tensor" % (where, _describe(x)))
        if x.layout != torch.strided:
            raise _mugraph.Error("%s: a %s tensor; expected a dense (strided) one (.to_dense())"
                                 % (where, str(x.layout).replace("torch.", "")))
        if x.dtype != getattr(torch, torch_name):
            raise _mugraph.Error("%s: dtype %s, expected %s (torch.%s)"
                                 % (where, str(x.dtype).replace("torch.", ""), want, torch_name))
        got_shape, got_strides = tuple(x.shape), tuple(x.stride())
        ptr = x.data_ptr()
    elif hasattr(x, "__array_interface__"):
        if np_name is None:
            raise _mugraph.Error("%s: %s has no numpy dtype; pass a torch tensor (torch.%s)"
                                 % (where, want, torch_name))
        if str(x.dtype) != np_name:
            raise _mugraph.Error("%s: dtype %s, expected %s (numpy %s)"
                                 % (where, x.dtype, want, np_name))
        got_shape = tuple(x.shape)
        got_strides = tuple(s // x.itemsize for s in x.strides)
        if any(s % x.itemsize for s in x.strides) or not x.flags.aligned:
            raise _mugraph.Error("%s: not aligned to its element size (strides %s)"
                                 % (where, x.strides))
        ptr = x.__array_interface__["data"][0]
    else:
        raise _mugraph.Error("%s: a %s; expected a numpy array or a torch tensor (%s)"
                             % (where, type(x).__name__, want))
    if got_shape != tuple(shape):
        raise _mugraph.Error("%s: shape %s, expected %s" % (where, got_shape, want))
    # Strides matter along dims of size > 1 only.
    if any(n > 1 and a != b for n, a, b in zip(shape, got_strides, strides)):
        row_major = all(n <= 1 or a == b for n, a, b in zip(shape, strides, _row_major(shape)))
        raise _mugraph.Error("%s: strides %s (elements), expected %s (%s)"
                             % (where, got_strides, tuple(strides),
                                "contiguous: call .contiguous() / numpy.ascontiguousarray"
                                if row_major else "the program's layout"))
    return ptr


def _non_finite(a):
    if _is_torch(a):
        import torch
        return int((~torch.isfinite(a)).sum())
    import numpy as np
    return int(a.size - np.isfinite(a).sum())


def _row_major(shape):
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= d
    return tuple(reversed(out))


def _device(tensors):
    """The torch CUDA device all inputs are on, or None when all are on the CPU; mixing the two
    is an error naming the first input that differs."""
    first = None
    for i, x in enumerate(tensors):
        d = x.device if _is_torch(x) else None
        on_cuda = d is not None and d.type == "cuda"
        if first is None:
            first = (i, d if on_cuda else None)
            continue
        if (d if on_cuda else None) != first[1]:
            raise _mugraph.Error("input %d: a %s, but input %d is a %s; all inputs must be on the "
                                 "same device" % (i, _describe(x), first[0],
                                                  _describe(tensors[first[0]])))
    return None if first is None else first[1]


def _alloc(spec, use_torch, device=None):
    """An output buffer for graph output `spec`, in the graph's layout (on `device`, a torch
    CUDA device, if given)."""
    name, dtype, shape, strides = spec
    np_name, torch_name = _DTYPES[dtype]
    size = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    if use_torch or np_name is None or device is not None:
        import torch
        t = torch.empty_strided(tuple(shape), tuple(strides), dtype=getattr(torch, torch_name),
                                device=device if device is not None else "cpu")
        return t, t.data_ptr()
    import numpy as np
    flat = np.empty(max(size, 1), dtype=np_name)
    a = np.lib.stride_tricks.as_strided(flat, shape=tuple(shape),
                                        strides=tuple(s * flat.itemsize for s in strides))
    return a, flat.__array_interface__["data"][0]


class Result:
    """The outcome of superoptimize(): the uGraph handed out and how it was chosen.

    best        the KernelGraph handed out (the program itself when nothing faster was proven)
    chosen      "program" or the variant's label ("cand1")
    verdict     VERIFIED, ... of the chosen variant ("the program itself" for the program)
    verified    whether what is handed out is proven (VERIFIED, or the program itself)
    speedup     measured over the program (0.0 when nothing could be measured)
    report      the report text (what `mugraph optimize` prints)
    source      the generated source of `best` (C++ for cpu, CUDA for GPU targets)
    from_cache  answered from the persistent result cache (no search ran)
    cache_note  what the result cache did, when something is worth saying
    result(*tensors) runs `best`, in the program's input order: on the CPU for numpy arrays
    or torch CPU tensors, returning its outputs (torch tensors if any input was one); on the GPU
    for torch CUDA tensors (all on one device) when the target is a GPU (a100, h100, h200):
    the generated CUDA, compiled by nvcc for the device's compute capability at the first
    such call, enqueued on torch's current stream without a synchronization, outputs allocated
    by torch on that device (side streams work as with any torch op; CUDA graphs capture the
    calls after the first). A result runs on the one device of its first CUDA call.
    """

    def __init__(self, program, optimized):
        self.program = program
        self._o = optimized
        self._kernel = None
        self._cuda = None  # (device index, _mugraph.CudaKernel) once run on a GPU
        self._checked_cuda = False

    best = property(lambda self: self._o.best)
    chosen = property(lambda self: self._o.chosen)
    verdict = property(lambda self: self._o.verdict)
    verified = property(lambda self: self._o.verified)
    speedup = property(lambda self: self._o.speedup)
    measured = property(lambda self: self._o.measured)
    report = property(lambda self: self._o.report)
    source = property(lambda self: self._o.source)
    from_cache = property(lambda self: self._o.from_cache)
    cache_note = property(lambda self: self._o.cache_note)
    target = property(lambda self: self._o.target)

    def __repr__(self):
        return "<mugraph.Result %s, %s, %s%s>" % (
            self.chosen, self.verdict,
            "%.2fx measured" % self.speedup if self.measured else "not measured",
            ", from the cache" if self.from_cache else "")

    def _arguments(self, tensors):
        """The program's inputs from the call's arguments: for a program from from_torch, the
        function's own arguments (seen through the layout each input declares) and the bound
        parameters; else the arguments themselves, in the program's input order."""
        sources = getattr(self.program, "_sources", None)
        ins = self.best.inputs()
        if sources is None:
            if len(tensors) != len(ins):
                raise _mugraph.Error("expected %d input(s) (%s), got %d"
                                     % (len(ins), ", ".join(n for n, *_ in ins), len(tensors)))
            return list(tensors)
        arity = self.program._arity
        if len(tensors) != arity:
            raise _mugraph.Error("expected the function's %d argument(s), got %d"
                                 % (arity, len(tensors)))
        out = []
        for name, *_ in ins:
            source, perm, copy = sources[name]
            t = tensors[source] if isinstance(source, int) else source
            if perm is not None and _is_torch(t):
                t = t.permute(*perm)
            elif perm is not None:
                t = t.transpose(perm)
            if copy:  # a view that is not dense: mugraph reads it row-major
                t = t.contiguous() if _is_torch(t) else __import__("numpy").ascontiguousarray(t)
            out.append(t)
        return out

    def __call__(self, *tensors):
        if any(_is_torch(t) and t.requires_grad for t in tensors):
            import torch
            if torch.is_grad_enabled():
                import warnings
                warnings.warn("mugraph kernels have no backward: the outputs do not require "
                              "grad (call under torch.no_grad() for inference)", stacklevel=2)
        tensors = self._arguments(tensors)
        # CUDA kernels load tiles in 16-byte chunks (cp.async): a view that starts inside its
        # buffer at an address that is not a multiple of 16 is copied (the compiled entry
        # refuses such a pointer with "misaligned address").
        tensors = [t.clone() if _is_torch(t) and t.is_cuda and t.data_ptr() % 16 else t
                   for t in tensors]
        ins, outs = self.best.inputs(), self.best.outputs()
        ptrs = [_pointer(x, spec, i) for i, (x, spec) in enumerate(zip(tensors, ins))]
        device = _device(tensors)
        if device is not None:
            outs = self._run_cuda(device, ptrs, outs)
            if self._checked_cuda:
                return outs
            import torch
            if torch.cuda.is_current_stream_capturing():
                return outs
            self._checked_cuda = True  # once: the check synchronizes with the device
        else:
            use_torch = any(_is_torch(x) for x in tensors)
            results = [_alloc(spec, use_torch) for spec in outs]
            if self._kernel is None:
                self._kernel = _mugraph.CpuKernel(self.best)
            self._kernel.run(ptrs, [p for _, p in results])
            outs = tuple(r for r, _ in results)
        for (name, *_), o in zip(self.best.outputs(), outs):
            bad = _non_finite(o)
            if bad:
                import warnings
                why = ("overflow in its storage type? mugraph's softmax subtracts no max: large "
                       "logits overflow" if "exp(" in self.best.text() else
                       "overflow in its storage type, or a division by zero?")
                warnings.warn("mugraph: output '%s' has %d non-finite entries (%s)"
                              % (name, bad, why), stacklevel=2)
        return outs

    def _run_cuda(self, device, ptrs, outs):
        """Enqueues `best` on torch's current stream of `device`; returns the outputs."""
        import torch
        if self.target == "cpu":
            raise _mugraph.Error("the inputs are CUDA tensors, but this result was optimized for "
                                 "target 'cpu': superoptimize(..., target='h100') (or a100, h200; "
                                 "mg.backend(target='h100') under torch.compile) runs on CUDA "
                                 "tensors; or move the inputs with .cpu()")
        index = device.index if device.index is not None else torch.cuda.current_device()
        if self._cuda is None:
            if torch.cuda.is_current_stream_capturing():
                raise _mugraph.Error("the first call on CUDA tensors compiles and loads the kernel, "
                                     "which a CUDA graph capture cannot hold: call the result once "
                                     "before capturing")
            major, minor = torch.cuda.get_device_capability(index)
            self._cuda = (index, _mugraph.CudaKernel(self.best, self.target, 10 * major + minor))
        if self._cuda[0] != index:
            # The compiled module keeps per-device state (its cuBLAS handle, shared-memory
            # attributes): one device per result.
            raise _mugraph.Error("this result runs on cuda:%d (its first CUDA call); the inputs "
                                 "are on cuda:%d: superoptimize the program again for another "
                                 "device" % (self._cuda[0], index))
        kernel = self._cuda[1]
        results = [_alloc(spec, True, torch.device("cuda", index)) for spec in outs]
        ws_bytes = kernel.workspace_bytes()
        # From torch's caching allocator, in stream order: freed when this call's kernels are
        # done with it, as torch frees its own temporaries.
        ws = torch.empty(ws_bytes, dtype=torch.uint8, device=torch.device("cuda", index)) \
            if ws_bytes > 0 else None
        stream = torch.cuda.current_stream(index)
        kernel.run(ptrs, [p for _, p in results], 0 if ws is None else ws.data_ptr(),
                   stream.cuda_stream, index)
        return tuple(r for r, _ in results)
