"""mg.from_torch(fn_or_module, *example_inputs): a mugraph program from PyTorch code (torch.fx).

The function or module is traced symbolically (torch.fx), shapes and dtypes come from the
example inputs (ShapeProp), and each node maps to mugraph ops:
  matmul / @ / torch.matmul / torch.mm / torch.bmm        matmul
  F.linear, nn.Linear                                      matmul with the weight's transpose (a
                                                           strided input: W.t() is passed as is,
                                                           zero-copy), then add the bias
  + - * /  (tensors; a Python number on one side of * or / scales)   add sub mul div / scale
  exp sqrt rsqrt, pow(2) / square                          exp sqrt reciprocal(sqrt) square
  sum / mean over one dim (keepdim)                        sum(dim, group=n) (mean: then scale 1/n)
  silu relu gelu (F. and nn.), softmax(dim)                silu relu gelu, softmax (Lax form)
  view / reshape, transpose / permute / .t / .T of a program input or a parameter (its layout)
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
        from torch.fx.passes.shape_prop import ShapeProp  # noqa: F401
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
        name = self.g._fresh(_ident(p.name), "in")
        tensor = self.g.input(shape, self.dtype(node, t), name=name,
                              strides=None if keep else strides)
        self.sources[name] = (p.source, p.perm)
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
                for o in outs:
                    if not isinstance(o, torch.fx.Node):
                        self.fail(node, "an output is not a tensor")
                    self.g.output(self.tensor(node, o, "an output").tensor)
            else:
                self.env[node] = self.op(node, F)
        return self.g, self.sources

    def op(self, node, F):
        torch = self.torch
        tgt = node.target
        a = node.args
        kw = node.kwargs
        if node.op == "call_module":
            mod = self.gm.get_submodule(tgt)
            if isinstance(mod, torch.nn.Linear):
                return self.linear(node, a[0], mod.weight, mod.bias, "%s.weight" % tgt,
                                   "%s.bias" % tgt)
            for cls, op in ((torch.nn.SiLU, "silu"), (torch.nn.ReLU, "relu"), (torch.nn.GELU, "gelu")):
                if isinstance(mod, cls):
                    return self.unary(node, op, a[0])
            if isinstance(mod, torch.nn.Softmax):
                return self.softmax(node, a[0], mod.dim)
            self.fail(node, "module %s (%s) is not supported" % (tgt, type(mod).__name__))
        name = tgt if isinstance(tgt, str) else getattr(tgt, "__name__", str(tgt))
        if tgt in (torch.matmul, operator.matmul, torch.mm, torch.bmm) or name == "matmul":
            return self.binary(node, "matmul", a[0], a[1])
        if tgt is F.linear:
            return self.linear(node, a[0], a[1], a[2] if len(a) > 2 else kw.get("bias"), None, None)
        if tgt in (operator.add, torch.add) or name == "add":
            return self.arith(node, "add", a[0], a[1])
        if tgt in (operator.sub, torch.sub) or name == "sub":
            return self.arith(node, "sub", a[0], a[1])
        if tgt in (operator.mul, torch.mul) or name == "mul":
            return self.arith(node, "mul", a[0], a[1])
        if tgt in (operator.truediv, torch.div) or name in ("div", "truediv"):
            return self.arith(node, "div", a[0], a[1])
        if tgt in (torch.exp,) or name == "exp":
            return self.unary(node, "exp", a[0])
        if tgt in (torch.sqrt,) or name == "sqrt":
            return self.unary(node, "sqrt", a[0])
        if tgt in (torch.rsqrt,) or name == "rsqrt":
            s = self.unary(node, "sqrt", a[0])
            return self.out(node, self.g.reciprocal(s.tensor))
        if tgt in (torch.square,) or name == "square":
            return self.unary(node, "square", a[0])
        if tgt in (torch.pow, operator.pow) or name == "pow":
            if a[1] != 2:
                self.fail(node, "pow with exponent %r (only 2 is supported)" % (a[1],))
            return self.unary(node, "square", a[0])
        if tgt in (F.silu, torch.nn.functional.silu) or name == "silu":
            return self.unary(node, "silu", a[0])
        if tgt in (F.relu, torch.relu) or name == "relu":
            return self.unary(node, "relu", a[0])
        if tgt is F.gelu or name == "gelu":
            if kw.get("approximate", "none") != "none":
                self.fail(node, "gelu(approximate=%r): only the exact gelu" % kw["approximate"])
            return self.unary(node, "gelu", a[0])
        if tgt in (F.softmax, torch.softmax) or name == "softmax":
            dim = a[1] if len(a) > 1 else kw.get("dim")
            return self.softmax(node, a[0], dim)
        if tgt in (torch.sum, torch.mean) or name in ("sum", "mean"):
            dim = a[1] if len(a) > 1 else kw.get("dim")
            keep = a[2] if len(a) > 2 else kw.get("keepdim", False)
            return self.reduce(node, "mean" if name == "mean" or tgt is torch.mean else "sum",
                               a[0], dim, keep)
        if tgt in (torch.reshape,) or name in ("view", "reshape"):
            shape = a[1:] if len(a) > 2 or not isinstance(a[1], (tuple, list)) else a[1]
            return self.reshape(node, a[0], shape)
        if tgt in (torch.transpose,) or name in ("transpose", "t", "permute") or \
                (node.op == "call_function" and tgt is getattr and a[1] == "T"):
            return self.layout(node, name, a)
        if node.op == "call_function" and tgt is getattr:
            self.fail(node, "attribute .%s is not supported" % a[1])
        self.fail(node, "op %s is not supported by mugraph" % name)

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
        if op == "div" and vx.tensor is not None and vy.number not in (None, 0):
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
        s = self.g.sum(v.tensor, dim=d, group=n)
        if kind == "mean":
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
        """transpose / permute / .t / .T of a program input or parameter: a view of it, which
        becomes an input in that layout at its first use. Of a computed tensor: an error."""
        src = a[0]
        v = self.env.get(src) if isinstance(src, self.torch.fx.Node) else None
        if v is None or v.pending is None:
            self.fail(node, "%s of a computed tensor is not supported (only of a program input "
                      "or parameter, which then becomes an input in that layout)" % name)
        rank = v.pending.t.dim()
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
        return _Value(pending=v.pending.view(perm))


def _frac(x):
    from fractions import Fraction
    return Fraction(x).limit_denominator(1 << 30)


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
    from torch.fx.passes.shape_prop import ShapeProp
    tracer = _tracer(torch)()
    tracer.record_stack_traces = True
    root = fn if isinstance(fn, torch.nn.Module) else torch.nn.Module()
    try:
        graph = tracer.trace(fn)
    except Exception as e:
        raise _mugraph.Error("from_torch: torch.fx could not trace %s: %s"
                             % (getattr(fn, "__name__", type(fn).__name__), e)) from None
    gm = torch.fx.GraphModule(root, graph)
    with torch.no_grad():
        ShapeProp(gm).propagate(*example_inputs)
    conv = _Converter(torch, gm, example_inputs)
    g, sources = conv.run()
    g._sources = sources
    g._arity = len([n for n in gm.graph.nodes if n.op == "placeholder"])
    return g
