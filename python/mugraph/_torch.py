"""mg.from_torch(fn_or_module, *example_inputs): a mugraph program from PyTorch code (torch.fx).

The function or module is traced symbolically (torch.fx), shapes and dtypes come from the
example inputs (run once on them, _record_shapes), and each node maps to mugraph ops:
  matmul / @ / torch.matmul / torch.mm / torch.bmm        matmul
  F.linear, nn.Linear                                      matmul with the weight's transpose (a
                                                           strided input: W.t() is passed as is,
                                                           zero-copy), then add the bias
  + - * /  (tensors; a Python number on one side of * or / scales)   add sub mul div / scale
  exp sqrt rsqrt, pow(2) / square                          exp sqrt reciprocal(sqrt) square
  sum / mean over one dim (keepdim)                        sum(dim, group=n) (mean: then scale 1/n)
  silu relu gelu (F. and nn.), softmax(dim)                silu relu gelu, softmax (Lax form:
                                                           exp(x) / sum(exp(x)), no max subtracted:
                                                           logits above ~88 in f32, ~11 in f16
                                                           overflow where torch's do not; the
                                                           result warns on non-finite outputs)
  view / reshape, transpose / permute / .t / .T (of a program input or a parameter: its layout,
  zero-copy; of a computed tensor: the transpose op)
Parameters and buffers of a module become program inputs bound to their tensors: the result of
superoptimize() is then called with the function's own inputs only. Anything else raises
mugraph.Error naming the op and the source line.
"""
import operator

from . import _mugraph
from ._builder import Graph

_DT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def _torch():
    try:
        import torch
        import torch.fx  # noqa: F401
    except ImportError as e:  # pragma: no cover
        raise _mugraph.Error("from_torch needs PyTorch 2.x (pip install torch): %s" % e)
    return torch


class _Value:
    """What an fx node stands for: a tensor of the graph (with its shape), a Python number, or
    a program input not declared yet (`pending`: its tensor, where it comes from and the
    permutation it is seen through), declared at its first use so that a transpose or permute
    of it becomes its layout (the same memory, zero-copy) instead of an op."""

    def __init__(self, tensor=None, shape=None, number=None, pending=None):
        self.tensor, self.shape, self.number, self.pending = tensor, shape, number, pending


class _Pending:
    def __init__(self, t, source, name, perm=None):
        self.t, self.source, self.name, self.perm = t, source, name, perm

    def view(self, perm):
        base = self.perm or list(range(self.t.dim()))
        return _Pending(self.t, self.source, self.name, [base[p] for p in perm])


def _where(node):
    st = getattr(node, "stack_trace", None) or node.meta.get("stack_trace")
    if st:
        lines = [l.strip() for l in st.strip().splitlines()]
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].startswith("File "):
                code = lines[i + 1] if i + 1 < len(lines) else ""
                return "%s: %s" % (lines[i], code) if code else lines[i]
    return "node '%s' (%s)" % (node.name, node.format_node())


class _Converter:
    def __init__(self, torch, gm, args):
        self.torch, self.gm, self.args = torch, gm, args
        self.g = Graph()
        self.env = {}
        # program input name -> (source, perm): source is the argument's index (int) or the
        # parameter / buffer tensor; perm the permutation of its dims the input sees (or None)
        self.sources = {}

    def fail(self, node, why):
        raise _mugraph.Error("from_torch: %s: %s" % (_where(node), why))

    def dtype(self, node, t):
        name = str(t.dtype).replace("torch.", "")
        if name not in _DT:
            self.fail(node, "dtype %s is not supported (f32, f16, bf16)" % name)
        return _DT[name]

    def declare(self, node, p):
        """The program input for pending input `p` (its tensor seen through p.perm)."""
        t = p.t
        shape, strides = list(t.shape), list(t.stride())
        if p.perm is not None:
            shape, strides = [shape[i] for i in p.perm], [strides[i] for i in p.perm]
        if len(shape) == 0 or len(shape) > 4:
            self.fail(node, "'%s' has %d dims (mugraph tensors have 1 to 4)" % (p.name, len(shape)))
        rm = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            rm[i] = rm[i + 1] * shape[i + 1]
        keep = all(n <= 1 or x == y for n, x, y in zip(shape, strides, rm))
        # mugraph layouts are dense (row-major in some order of the dims); a view that is not
        # (a slice of a larger tensor) is declared row-major and copied when called.
        copy = not keep and not _dense(shape, strides)
        name = _ident(p.name)
        while name in self.g._names:  # the same tensor declared twice, or a clash
            name += "_"
        tensor = self.g.input(shape, self.dtype(node, t), name=name,
                              strides=None if keep or copy else strides)
        self.sources[name] = (p.source, p.perm, copy)
        return _Value(tensor, tuple(shape))

    def value(self, node, a):
        """The _Value of argument `a` (a pending input is declared here, at its first use)."""
        if isinstance(a, self.torch.fx.Node):
            v = self.env[a]
            if v.pending is not None:
                v = self.declare(node, v.pending)
                self.env[a] = v
            return v
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            return _Value(number=a)
        self.fail(node, "argument %r is not supported" % (a,))

    def tensor(self, node, a, what):
        v = self.value(node, a)
        if v.tensor is None:
            self.fail(node, "%s must be a tensor, got the number %r" % (what, v.number))
        return v

    def out(self, node, tensor):
        meta = node.meta.get("tensor_meta")
        # mugraph's ops keep their inputs' dtype: an op whose torch result has another dtype
        # (type promotion, f16 x f32) would be computed in the wrong precision.
        ins = [a.meta.get("tensor_meta") for a in node.args if isinstance(a, self.torch.fx.Node)]
        if meta is not None and ins and ins[0] is not None and meta.dtype != ins[0].dtype:
            self.fail(node, "its result is %s but its input is %s (type promotion is not "
                      "supported)" % (str(meta.dtype).replace("torch.", ""),
                                      str(ins[0].dtype).replace("torch.", "")))
        return _Value(tensor, tuple(meta.shape) if meta is not None else None)

    def run(self):
        torch = self.torch
        F = torch.nn.functional
        ph = 0
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                if ph >= len(self.args):
                    self.fail(node, "more function arguments than example inputs (%d)" % len(self.args))
                t = self.args[ph]
                if not isinstance(t, torch.Tensor):
                    self.fail(node, "example input %d is a %s, not a tensor" % (ph, type(t).__name__))
                self.env[node] = _Value(pending=_Pending(t, ph, node.name))
                ph += 1
            elif node.op == "get_attr":
                t = _fetch(self.gm, node.target)
                if not isinstance(t, torch.Tensor):
                    self.fail(node, "attribute %s is not a tensor" % node.target)
                self.env[node] = _Value(pending=_Pending(t.detach(), t.detach(), node.target))
            elif node.op == "output":
                outs = node.args[0]
                outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
                done = set()
                for o in outs:
                    if not isinstance(o, torch.fx.Node):
                        self.fail(node, "an output is not a tensor")
                    try:
                        v = self.tensor(node, o, "an output")
                        t = v.tensor
                        if t.name in self.sources or t.name in done:
                            # An input (or a view of one) returned, or one tensor returned
                            # twice: a mugraph output is a tensor of its own, so a copy.
                            rank = len(v.shape) if v.shape is not None else len(self.g._shape(t.name))
                            t = self.g.op("transpose", t, perm=list(range(rank)))
                        done.add(t.name)
                        self.g.output(t)
                    except _mugraph.Error as e:
                        if str(e).startswith("from_torch: "):
                            raise
                        self.fail(node, str(e))
            else:
                try:
                    self.env[node] = self.op(node, F)
                except _mugraph.Error as e:
                    if str(e).startswith("from_torch: "):
                        raise
                    self.fail(node, str(e))
        return self.g, self.sources

    def op(self, node, F):
        torch = self.torch
        a, kw = node.args, node.kwargs
        kind = classify(torch, node, dict(self.gm.named_modules()))
        name = _name(node)
        if kind is None and node.kwargs and classify_ignoring_kwargs(torch, node) is not None:
            self.fail(node, "%s with %s is not supported (it changes what the op computes)"
                      % (name, ", ".join("%s=%r" % kv for kv in node.kwargs.items())))
        if kind is None:
            if node.op == "call_module":
                mod = self.gm.get_submodule(node.target)
                self.fail(node, "module %s (%s) is not supported" % (node.target, type(mod).__name__))
            if node.op == "call_function" and node.target is getattr:
                self.fail(node, "attribute .%s is not supported" % a[1])
            self.fail(node, "op %s is not supported by mugraph" % name)
        if kind.startswith("module "):
            mod = self.gm.get_submodule(node.target)
            kind = kind[len("module "):]
            if kind == "linear":
                return self.linear(node, a[0], mod.weight, mod.bias, "%s.weight" % node.target,
                                   "%s.bias" % node.target)
            if kind == "softmax":
                return self.softmax(node, a[0], mod.dim)
            return self.unary(node, kind, a[0])
        if kind == "matmul":
            return self.binary(node, "matmul", a[0], a[1])
        if kind == "linear":
            return self.linear(node, a[0], a[1], a[2] if len(a) > 2 else kw.get("bias"), None, None)
        if kind in ("add", "sub", "mul", "div"):
            return self.arith(node, kind, a[0], a[1])
        if kind == "rsqrt":
            s = self.unary(node, "sqrt", a[0])
            return self.out(node, self.g.reciprocal(s.tensor))
        if kind == "pow":
            if a[1] != 2:
                self.fail(node, "pow with exponent %r (only 2 is supported)" % (a[1],))
            return self.unary(node, "square", a[0])
        if kind == "gelu" and kw.get("approximate", "none") != "none":
            self.fail(node, "gelu(approximate=%r): only the exact gelu" % kw["approximate"])
        if kind in ("neg", "exp", "sqrt", "square", "silu", "relu", "gelu"):
            return self.unary(node, kind, a[0])
        if kind == "softmax":
            return self.softmax(node, a[0], a[1] if len(a) > 1 else kw.get("dim"))
        if kind in ("sum", "mean"):
            dim = a[1] if len(a) > 1 else kw.get("dim")
            keep = a[2] if len(a) > 2 else kw.get("keepdim", False)
            return self.reduce(node, kind, a[0], dim, keep)
        if kind == "reshape":
            return self.reshape(node, a[0], None)
        return self.layout(node, name, a)

    def unary(self, node, op, x):
        return self.out(node, self.g.op(op, self.tensor(node, x, op).tensor))

    def binary(self, node, op, x, y):
        return self.out(node, self.g.op(op, self.tensor(node, x, op).tensor,
                                        self.tensor(node, y, op).tensor))

    def arith(self, node, op, x, y):
        vx, vy = self.value(node, x), self.value(node, y)
        if vx.tensor is not None and vy.tensor is not None:
            return self.out(node, self.g.op(op, vx.tensor, vy.tensor))
        if op == "mul" and (vx.number is not None) != (vy.number is not None):
            t, n = (vy, vx.number) if vx.number is not None else (vx, vy.number)
            return self.out(node, self.g.scale(t.tensor, factor=n))
        if op == "div" and vx.tensor is not None and vy.number is not None and vy.number != 0:
            return self.out(node, self.g.scale(vx.tensor, factor=1 / _frac(vy.number)))
        self.fail(node, "%s with a Python number (%r) is not supported: mugraph has no constant "
                  "tensors (only x * c and x / c, as scale)" % (op, vx.number if vx.number is not None else vy.number))

    def linear(self, node, x, w, b, wname, bname):
        vx = self.tensor(node, x, "linear input")
        if isinstance(w, self.torch.Tensor):   # nn.Linear: its parameter, seen transposed
            vw = self.declare(node, _Pending(w.detach(), w.detach(), wname, [1, 0]))
        else:
            v = self.env.get(w) if isinstance(w, self.torch.fx.Node) else None
            if v is None or v.pending is None or v.pending.t.dim() != 2:
                self.fail(node, "linear with a computed weight is not supported (only a weight "
                          "that is a 2-dim input or parameter)")
            vw = self.declare(node, v.pending.view([1, 0]))
        y = self.g.matmul(vx.tensor, vw.tensor)
        if b is None:
            return self.out(node, y)
        if isinstance(b, self.torch.Tensor):
            vb = self.declare(node, _Pending(b.detach(), b.detach(), bname))
        else:
            vb = self.tensor(node, b, "linear bias")
        return self.out(node, self.g.add(y, vb.tensor))

    def softmax(self, node, x, dim):
        v = self.tensor(node, x, "softmax input")
        d = _dim(self, node, dim, len(v.shape))
        return self.out(node, self.g.softmax(v.tensor, dim=d))

    def reduce(self, node, kind, x, dim, keep):
        v = self.tensor(node, x, kind + " input")
        if isinstance(dim, (tuple, list)):
            if len(dim) != 1:
                self.fail(node, "%s over %d dims (one dim at a time is supported)" % (kind, len(dim)))
            dim = dim[0]
        if dim is None:
            self.fail(node, "%s over all elements (give dim)" % kind)
        d = _dim(self, node, dim, len(v.shape))
        n = v.shape[d]
        src = v.tensor
        narrow = str(node.meta["tensor_meta"].dtype) in ("torch.float16", "torch.bfloat16") \
            if node.meta.get("tensor_meta") is not None else True
        if kind == "mean" and narrow:
            # torch accumulates in f32; a sum stored in f16 overflows at 65504: scale first.
            src = self.g.scale(src, factor=_frac(1) / n)
        s = self.g.sum(src, dim=d, group=n)
        if kind == "mean" and not narrow:
            s = self.g.scale(s, factor=_frac(1) / n)
        if not keep:
            shape = [k for i, k in enumerate(v.shape) if i != d]
            if not shape:
                self.fail(node, "%s to a scalar is not supported" % kind)
            s = self.g.reshape(s, shape=shape)
        return self.out(node, s)

    def reshape(self, node, x, shape):
        v = self.tensor(node, x, "reshape input")
        meta = node.meta.get("tensor_meta")
        if meta is None:
            self.fail(node, "reshape: shape unknown")
        return self.out(node, self.g.reshape(v.tensor, shape=list(meta.shape)))

    def layout(self, node, name, a):
        """transpose / permute / .t / .T: of a program input or parameter, a view of it, which
        becomes an input in that layout at its first use (zero-copy); of a computed tensor, a
        transpose op."""
        src = a[0]
        v = self.env.get(src) if isinstance(src, self.torch.fx.Node) else None
        if v is None or (v.pending is None and v.tensor is None):
            self.fail(node, "%s of %r: not a tensor of the program" % (name, src))
        if v.pending is not None:
            rank = v.pending.t.dim()
        else:
            rank = len(v.shape) if v.shape is not None else len(self.g._shape(v.tensor.name))
        if name == "permute":
            perm = list(a[1] if len(a) == 2 and isinstance(a[1], (tuple, list)) else a[1:])
            perm = [_dim(self, node, d, rank) for d in perm]
            if sorted(perm) != list(range(rank)):
                self.fail(node, "permute%s is not a permutation of %d dims" % (tuple(perm), rank))
        elif name == "transpose":
            i, j = (_dim(self, node, a[1], rank), _dim(self, node, a[2], rank))
            perm = list(range(rank))
            perm[i], perm[j] = perm[j], perm[i]
        else:  # t, T
            perm = list(range(rank))[::-1]
        if v.pending is not None:
            return _Value(pending=v.pending.view(perm))
        # (An identity perm is a copy too: the result is a tensor of its own, as torch's.)
        return self.out(node, self.g.op("transpose", v.tensor, perm=perm))


def _name(node):
    t = node.target
    return t if isinstance(t, str) else getattr(t, "__name__", str(t))


def classify(torch, node, modules):
    """The kind of mugraph op an fx node maps to ("matmul", "linear", "add", ..., "layout" for
    transpose/permute/.t/.T, "module linear" etc. for nn modules), or None. The one table of
    what from_torch and the torch.compile backend accept."""
    F = torch.nn.functional
    if node.op == "call_module":
        mod = modules.get(node.target)
        for cls, kind in ((torch.nn.Linear, "linear"), (torch.nn.SiLU, "silu"),
                          (torch.nn.ReLU, "relu"), (torch.nn.GELU, "gelu"),
                          (torch.nn.Softmax, "softmax")):
            # The exact class: subclasses (quantization-aware Linear, LinearReLU) do more.
            if type(mod) is cls:
                if getattr(mod, "inplace", False) or getattr(mod, "approximate", "none") != "none":
                    return None
                return "module " + kind
        return None
    if node.op not in ("call_function", "call_method"):
        return None
    t, name = node.target, _name(node)
    fn = node.op == "call_function"
    table = (
        ("matmul", (torch.matmul, operator.matmul, torch.mm, torch.bmm), ("matmul", "mm", "bmm")),
        ("linear", (F.linear,), ()),
        ("add", (operator.add, torch.add), ("add",)),
        ("sub", (operator.sub, torch.sub), ("sub",)),
        ("mul", (operator.mul, torch.mul), ("mul",)),
        ("div", (operator.truediv, torch.div), ("div", "truediv")),
        ("neg", (operator.neg, torch.neg), ("neg",)),
        ("exp", (torch.exp,), ("exp",)),
        ("sqrt", (torch.sqrt,), ("sqrt",)),
        ("rsqrt", (torch.rsqrt,), ("rsqrt",)),
        ("square", (torch.square,), ("square",)),
        ("pow", (torch.pow, operator.pow), ("pow",)),
        ("silu", (F.silu,), ("silu",)),
        ("relu", (F.relu, torch.relu), ("relu",)),
        ("gelu", (F.gelu,), ("gelu",)),
        ("softmax", (F.softmax, torch.softmax), ("softmax",)),
        ("sum", (torch.sum,), ("sum",)),
        ("mean", (torch.mean,), ("mean",)),
        ("reshape", (torch.reshape,), ("view", "reshape")),
        ("layout", (torch.transpose, torch.permute), ("transpose", "t", "permute")),
    )
    for kind, fns, methods in table:
        if (fn and any(t is f for f in fns)) or (not fn and name in methods):
            return kind if _kwargs_ok(torch, kind, node) else None
    if fn and t is getattr and len(node.args) > 1 and node.args[1] == "T":
        return "layout"
    return None


# Keyword arguments each kind accepts, with the values it accepts (None: any value of that
# name is read by the converter). Anything else (alpha=, rounding_mode=, out=, inplace=True,
# dtype=..., approximate="tanh") changes what the op computes: not supported.
_KWARGS = {
    "linear": {"bias": None},
    "softmax": {"dim": None, "_stacklevel": None, "dtype": (None,)},
    "sum": {"dim": None, "keepdim": None},
    "mean": {"dim": None, "keepdim": None},
    "gelu": {"approximate": ("none",)},
    "relu": {"inplace": (False,)},
    "silu": {"inplace": (False,)},
}


def classify_ignoring_kwargs(torch, node):
    saved = node.kwargs
    try:
        node.kwargs = {}
        return classify(torch, node, {})
    finally:
        node.kwargs = saved


def _kwargs_ok(torch, kind, node):
    allowed = _KWARGS.get(kind, {})
    for k, v in node.kwargs.items():
        if k not in allowed or (allowed[k] is not None and v not in allowed[k]):
            return False
    if kind == "reshape" and any(isinstance(a, torch.dtype) for a in node.args[1:]):
        return False  # view(dtype) reinterprets bits
    if kind in ("softmax", "sum", "mean") and any(isinstance(a, torch.dtype) for a in node.args):
        return False
    return True


def _dense(shape, strides):
    """Whether `strides` lay `shape` out densely: row-major for some order of the dims."""
    dims = sorted((i for i in range(len(shape)) if shape[i] > 1), key=lambda i: -strides[i])
    expect = 1
    for i in reversed(dims):
        if strides[i] != expect:
            return False
        expect *= shape[i]
    return True


def _frac(x):
    """x as a ratio: the simplest one that is the same float (0.1 -> 1/10), else the exact one."""
    from fractions import Fraction
    exact = Fraction(x)
    f = exact.limit_denominator(1 << 30)
    return f if float(f) == float(exact) else exact


def _dim(conv, node, d, rank):
    if not isinstance(d, int):
        conv.fail(node, "dim %r must be an integer" % (d,))
    if not -rank <= d < rank:
        conv.fail(node, "dim %d out of range for %d dims" % (d, rank))
    return d % rank


def _ident(name):
    s = "".join(c if c.isalnum() or c == "_" else "_" for c in str(name))
    return s if s and not s[0].isdigit() else "t_" + s


def _fetch(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


class TensorMeta:
    def __init__(self, t):
        self.shape, self.stride, self.dtype = tuple(t.shape), tuple(t.stride()), t.dtype


def record_shapes(torch, gm, args):
    """Runs `gm` on `args` (real tensors) and records each node's shape, strides and dtype in
    node.meta["tensor_meta"]. (torch's ShapeProp would run under an active fake mode, such as
    torch.compile's, and record symbolic sizes.)"""

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            r = super().run_node(n)
            if isinstance(r, torch.Tensor):
                n.meta["tensor_meta"] = TensorMeta(r)
            return r

    Recorder(gm).run(*args)


def _tracer(torch):
    import os
    import traceback

    class Tracer(torch.fx.Tracer):
        """Records each node's innermost frame in the user's code (torch's own filter keeps
        frames from a `forward` on only, so plain functions would get none)."""

        def _filter_traceback_frames(self, summary):
            skip = (os.path.dirname(torch.__file__), os.path.dirname(__file__))
            user = [f for f in summary if not f.filename.startswith(skip)]
            return traceback.StackSummary.from_list(user[-1:])

    return Tracer


def from_torch(fn, *example_inputs):
    """A mugraph program (a Graph) computing `fn(*example_inputs)`: fn is a function or an
    nn.Module of the ops listed in mugraph._torch; shapes and dtypes come from the examples.
    Module parameters become inputs bound to their tensors."""
    torch = _torch()
    if not example_inputs:
        raise _mugraph.Error("from_torch(fn, *example_inputs): give one example tensor per "
                             "argument of fn (their shapes and dtypes define the program)")
    for k, t in enumerate(example_inputs):
        if not isinstance(t, torch.Tensor):
            raise _mugraph.Error("from_torch: example input %d is a %s; give torch tensors (their "
                                 "shapes and dtypes define the program)" % (k, type(t).__name__))
    tracer = _tracer(torch)()
    tracer.record_stack_traces = True
    try:
        graph = tracer.trace(fn)
    except Exception as e:
        raise _mugraph.Error("from_torch: torch.fx could not trace %s: %s"
                             % (getattr(fn, "__name__", type(fn).__name__), e)) from None
    gm = torch.fx.GraphModule(tracer.root, graph)  # the root holds closure constants too
    arity = len([n for n in gm.graph.nodes if n.op == "placeholder"])
    if arity != len(example_inputs):
        raise _mugraph.Error("from_torch: %s takes %d argument(s), %d example input(s) given"
                             % (getattr(fn, "__name__", type(fn).__name__), arity,
                                len(example_inputs)))
    with torch.no_grad():
        record_shapes(torch, gm, example_inputs)
    conv = _Converter(torch, gm, example_inputs)
    g, sources = conv.run()
    g._sources = sources
    g._arity = len([n for n in gm.graph.nodes if n.op == "placeholder"])
    return g
