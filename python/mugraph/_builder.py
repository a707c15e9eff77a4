"""The program builder: `g = mg.Graph(); X = g.input((16, 4096), "f16"); g.output(g.matmul(X, W))`.

Each call appends one line of mugraph's text form and checks the program so far with the C++
parser, so a wrong shape or dtype raises mugraph.Error at the call that made it, naming the op.
The ops are read from the C++ op table (kernel-level ops and the composites rms_norm, softmax,
attention), never listed here.
"""
import math
from fractions import Fraction

from . import _mugraph

_DTYPES = ("f16", "bf16", "f32")


class Tensor:
    """A tensor of a Graph under construction (its name in the program text)."""

    def __init__(self, graph, name):
        self.graph = graph
        self.name = name

    def __repr__(self):
        return "<mugraph.Tensor %s>" % self.name


def _attr_text(op, key, value):
    try:
        if key == "factor":
            # The simplest ratio that is the same float (0.1 -> 1/10), else the exact one.
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(value)
            exact = Fraction(value)
            f = exact.limit_denominator(1 << 30)
            if float(f) != float(exact):
                f = exact
            return "factor=%d/%d" % (f.numerator, f.denominator)
        if key in ("shape", "perm"):
            return "%s=[%s]" % (key, ", ".join(str(int(d)) for d in value))
        if isinstance(value, bool) or int(value) != value:
            raise ValueError(value)
        return "%s=%d" % (key, int(value))
    except (TypeError, ValueError, OverflowError):
        raise _mugraph.Error("%s: %s=%r is not %s" % (
            op, key, value, {"factor": "a finite number", "shape": "a list of ints",
                             "perm": "a list of ints"}.get(key, "an int"))) from None


class Graph:
    """Builds a program (a kernel graph of predefined ops) op by op."""

    def __init__(self):
        self._in_lines = []   # input declarations (the text format wants them before any op)
        self._lines = []      # ops
        self._names = set()
        self._count = 0
        self._outputs = []
        self._built = None

    def _fresh(self, name, prefix):
        if name is None:
            while True:
                self._count += 1
                name = "%s%d" % (prefix, self._count)
                if name not in self._names:
                    break
        if not isinstance(name, str) or not name.isidentifier():
            raise _mugraph.Error("tensor name %r: expected an identifier" % (name,))
        if name in self._names:
            raise _mugraph.Error("tensor name '%s' is already used in this graph" % name)
        return name

    def _check(self, line, what, defined):
        """Parses the program with `line` (which defines `defined`: an input declaration or an
        op) added; on an error, raises it naming `what`."""
        # A program must have an output, and an input cannot be one: a scratch op on the new
        # tensor serves as the output while checking.
        probe = "mg_builder_probe"
        while probe in self._names or probe == defined:
            probe += "_"
        is_input = line.startswith("input ")
        ins = self._in_lines + ([line] if is_input else [])
        ops = self._lines + ([] if is_input else [line])
        text = "\n".join(ins + ops + ["%s = neg(%s)" % (probe, defined)] +
                         ["output %s" % o for o in self._outputs + [probe]]) + "\n"
        try:
            _mugraph.parse(text, "<builder>")
        except _mugraph.Error as e:
            msg = str(e).split(": ", 1)[-1]
            raise _mugraph.Error(msg if msg.startswith(what) else "%s: %s" % (what, msg)) from None
        (self._in_lines if is_input else self._lines).append(line)
        self._built = None

    def _shape(self, name):
        """The shape of tensor `name` of the program so far."""
        probe = "mg_builder_probe"
        while probe in self._names:
            probe += "_"
        text = "\n".join(self._in_lines + self._lines +
                         ["%s = neg(%s)" % (probe, name), "output %s" % probe]) + "\n"
        return tuple(_mugraph.parse(text, "<builder>").outputs()[0][2])

    def _tensor(self, t, what):
        if not isinstance(t, Tensor) or t.graph is not self:
            raise _mugraph.Error("%s: expected a tensor of this graph, got %r" % (what, t))
        return t.name

    def input(self, shape, dtype="f16", name=None, strides=None):
        """A program input of `shape` (up to 4 dims) and `dtype` (f16, bf16, f32); `strides`
        (in elements) when its layout is not row-major (e.g. a transposed weight)."""
        if dtype not in _DTYPES:
            raise _mugraph.Error("input(): dtype must be one of %s, got %r"
                                 % (", ".join(_DTYPES), dtype))
        try:
            dims = ", ".join(str(int(d)) for d in shape)
        except TypeError:
            raise _mugraph.Error("input(): shape must be a tuple of ints, got %r" % (shape,)) from None
        name = self._fresh(name, "in")
        layout = "" if strides is None else " strides=[%s]" % ", ".join(str(int(s)) for s in strides)
        self._check("input %s : %s[%s]%s" % (name, dtype, dims, layout), "input '%s'" % name, name)
        self._names.add(name)
        return Tensor(self, name)

    def op(self, op, *inputs, name=None, **attrs):
        """Applies op `op` (a name of the op table or a composite) to `inputs`."""
        table = _op_table()
        if op not in table:
            raise _mugraph.Error("unknown op '%s' (ops: %s)" % (op, ", ".join(sorted(table))))
        arity, allowed = table[op]
        if len(inputs) != arity:
            raise _mugraph.Error("%s: expects %d input(s), got %d" % (op, arity, len(inputs)))
        for k in attrs:
            if k not in allowed:
                raise _mugraph.Error("%s: no attribute '%s' (it takes: %s)"
                                     % (op, k, ", ".join(allowed) or "none"))
        args = [self._tensor(t, "%s input %d" % (op, i)) for i, t in enumerate(inputs)]
        if "dim" in attrs and isinstance(attrs["dim"], int) and attrs["dim"] < 0:
            rank = len(self._shape(args[0]))  # numpy-style: -1 is the last dim
            if attrs["dim"] + rank >= 0:
                attrs["dim"] += rank
        if op == "sum" and "group" not in attrs and isinstance(attrs.get("dim"), int):
            shape = self._shape(args[0])  # sum over the whole dim unless a group is given
            # (a dim out of range gets group=1: the parser then says the dim is out of range)
            attrs["group"] = shape[attrs["dim"]] if 0 <= attrs["dim"] < len(shape) else 1
        args += [_attr_text(op, k, v) for k, v in attrs.items()]
        out = self._fresh(name, "t")
        self._check("%s = %s(%s)" % (out, op, ", ".join(args)), "%s '%s'" % (op, out), out)
        self._names.add(out)
        return Tensor(self, out)

    def output(self, *tensors):
        """Marks program outputs (in order)."""
        for t in tensors:
            n = self._tensor(t, "output")
            if n in self._outputs:
                raise _mugraph.Error("output '%s' is already an output" % n)
            self._outputs.append(n)
        self._built = None

    def text(self):
        """The program in mugraph's text form."""
        if not self._outputs:
            raise _mugraph.Error("the graph has no output (call g.output(...))")
        return "\n".join(self._in_lines + self._lines +
                         ["output %s" % o for o in self._outputs]) + "\n"

    def build(self):
        """The KernelGraph (parsed from text())."""
        if self._built is None:
            self._built = _mugraph.parse(self.text(), "<builder>")
        return self._built

    def check(self, target="cpu"):
        """Validates the program against `target`'s limits; raises mugraph.Error if invalid."""
        self.build().check(target)


_TABLE = None


def _op_table():
    global _TABLE
    if _TABLE is None:
        _TABLE = {name: (arity, tuple(attrs))
                  for name, arity, attrs in list(_mugraph.ops()) + list(_mugraph.composites())}
    return _TABLE


def _method(op):
    def call(self, *inputs, name=None, **attrs):
        return self.op(op, *inputs, name=name, **attrs)
    call.__name__ = op
    call.__doc__ = "g.%s(...): the op '%s' (see mugraph's op table)" % (op, op)
    return call


for _op in _op_table():
    if not hasattr(Graph, _op):
        setattr(Graph, _op, _method(_op))
