"""torch.compile(model, backend=mg.backend(target="cpu", ...), dynamic=False): mugraph as a
torch.compile backend (fixed shapes: a graph Dynamo compiles with symbolic shapes is left to
PyTorch, and the report says so).

Dynamo hands the backend an FX graph per compiled region of the model. The backend cuts it into
maximal regions of ops mugraph supports (_torch.classify: the same table as from_torch; torch's
CapabilityBasedPartitioner keeps each region convex, so no cycle is made), turns each region
into a program (from_torch), superoptimizes it (result cache included) and replaces the region
by a call of the result; everything else stays with PyTorch. Dynamo recompiles on new shapes and
calls the backend again. `backend.report()` lists the regions replaced and those kept, and why.

target="cpu" for models on the CPU (the results run through mugraph's CPU JIT); a GPU target
(a100, h100, h200) for models on CUDA tensors (the results' CUDA code runs on torch's current
stream; the search measures on the GPU when one is there). Inference only (no autograd through
the replaced regions: a graph whose inputs require grad is left to PyTorch, and the report says so).
"""
from . import _mugraph
from ._torch import _name, classify, from_torch, record_shapes

_DTYPES = ("torch.float32", "torch.float16", "torch.bfloat16")


def _meta(node):
    """(shape, stride, dtype) of a node's value, from Dynamo's example value or record_shapes."""
    v = node.meta.get("example_value")
    if v is not None and hasattr(v, "shape"):
        return tuple(v.shape), tuple(v.stride()), v.dtype
    m = node.meta.get("tensor_meta")
    if m is not None and hasattr(m, "shape"):
        return tuple(m.shape), tuple(m.stride), m.dtype
    return None


def _tensor_ok(node):
    m = _meta(node)
    if m is None:
        return False
    shape, _, dtype = m
    return str(dtype) in _DTYPES and 1 <= len(shape) <= 4 and all(isinstance(d, int) for d in shape)


def _kernel(torch, result, multiple):
    """The replacement of one region (an nn.Module, as the fused region was): runs the
    superoptimized result on the region's inputs."""

    class MugraphKernel(torch.nn.Module):
        def forward(self, *args):
            outs = result(*args)
            return tuple(outs) if multiple else outs[0]

    return MugraphKernel()


class Backend:
    """A torch.compile backend: `torch.compile(model, backend=mg.backend(target="cpu"))`."""

    def __init__(self, target="cpu", time_budget=None, cache=True, **options):
        if target not in _mugraph.targets():
            raise _mugraph.Error("mg.backend(target=%r): unknown target (known: %s)"
                                 % (target, ", ".join(_mugraph.targets())))
        # Checked now, as superoptimize would (a typo would otherwise surface only per region).
        _mugraph.check_search_options({k: v for k, v in options.items() if k not in
                                       ("top", "runs", "accept_unproved", "name", "progress")})
        self.target, self.time_budget, self.cache, self.options = target, time_budget, cache, options
        self.regions = []   # one dict per region seen: name, ops, replaced, chosen, why, ...
        self.left_to_torch = []  # per graph: the ops outside every region (PyTorch runs them)
        self.graphs = 0

    def report(self):
        lines = ["mugraph torch.compile backend: %d graph(s), %d region(s) replaced, %d kept in "
                 "PyTorch" % (self.graphs, sum(r["replaced"] for r in self.regions),
                              sum(not r["replaced"] for r in self.regions))]
        for r in self.regions:
            if r["replaced"]:
                lines.append("  %-10s %2d op(s) -> mugraph: %s, %s%s (%s)" % (
                    r["name"], r["ops"], r["chosen"], r["verdict"],
                    ", %.2fx measured" % r["speedup"] if r["measured"] else "",
                    "from the cache" if r["from_cache"] else "searched"))
            else:
                lines.append("  %-10s %2d op(s) kept in PyTorch: %s" % (r["name"], r["ops"], r["why"]))
        for g in self.left_to_torch:
            lines.append("  ops outside the regions (PyTorch runs them): " + g)
        return "\n".join(lines)

    def __call__(self, gm, example_inputs):
        import torch
        from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
        from torch.fx.passes.operator_support import OperatorSupportBase

        self.graphs += 1
        if any(isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs) and \
                torch.is_grad_enabled():
            self.regions.append(dict(name="graph%d" % self.graphs, ops=len(gm.graph.nodes),
                                     replaced=False, why="inputs require grad (inference only: "
                                     "run under torch.no_grad())"))
            return gm.forward
        if any(not isinstance(d, int) for n in gm.graph.nodes if n.op == "placeholder"
               and _meta(n) is not None for d in _meta(n)[0]) or \
                any(not isinstance(t, torch.Tensor) for t in example_inputs):
            self.regions.append(dict(name="graph%d" % self.graphs, ops=len(gm.graph.nodes),
                                     replaced=False, why="dynamic shapes (mugraph compiles for "
                                     "fixed shapes: torch.compile(..., dynamic=False) recompiles "
                                     "per shape)"))
            return gm.forward
        mutating = [str(n.target) for n in gm.graph.nodes if _mutates(n)]
        if mutating:
            # The partitioner sees data edges only: a region moved past an in-place op would
            # read the mutated value.
            self.regions.append(dict(name="graph%d" % self.graphs, ops=len(gm.graph.nodes),
                                     replaced=False, why="in-place ops (%s): left to PyTorch"
                                     % ", ".join(mutating[:3])))
            return gm.forward
        if not all(_meta(n) is not None for n in gm.graph.nodes if n.op == "placeholder"):
            record_shapes(torch, gm, example_inputs)
        modules = dict(gm.named_modules())

        class Support(OperatorSupportBase):
            def is_node_supported(self, submodules, node):
                return _supported(torch, node, modules)

        part = CapabilityBasedPartitioner(gm, Support(), allows_single_node_partition=True)
        # A region of data movement alone (views, transposes) stays with PyTorch: a kernel
        # would copy what torch leaves as a zero-copy view.
        partitions = [p for p in part.propose_partitions()
                      if any(classify(torch, n, modules) not in ("reshape", "layout")
                             for n in p.nodes)]
        fused = part.fuse_partitions(partitions)
        for node in list(fused.graph.nodes):
            if node.op != "call_module" or not str(node.target).startswith("fused_"):
                continue
            sub = fused.get_submodule(node.target)
            ops = sum(1 for n in sub.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
            region = dict(name="%d.%s" % (self.graphs, node.target), ops=ops)
            self.regions.append(region)
            try:
                examples = [_example(torch, a) for a in node.args]
                program = from_torch(sub, *examples)
                r = _superoptimize(program, self)
            except Exception as e:  # noqa: BLE001 - any failure keeps the region in PyTorch
                region.update(replaced=False, why=str(e) if isinstance(e, _mugraph.Error)
                              else "%s: %s" % (type(e).__name__, e))
                continue
            out = [n for n in sub.graph.nodes if n.op == "output"][0].args[0]
            multiple = isinstance(out, (tuple, list))
            setattr(fused, node.target, _kernel(torch, r, multiple))
            region.update(replaced=True, chosen=r.chosen, verdict=r.verdict, speedup=r.speedup,
                          measured=r.measured, from_cache=r.from_cache)
        left = sorted({_name(n) for n in fused.graph.nodes
                       if n.op in ("call_function", "call_method", "call_module")
                       and not str(n.target).startswith("fused_")
                       and _name(n) not in ("getitem", "getattr")})
        if left:
            self.left_to_torch.append("graph %d: %s" % (self.graphs, ", ".join(left)))
        fused.recompile()
        return fused.forward


def _mutates(n):
    """Whether fx node `n` writes one of its inputs (x.add_(...), inplace=True, out=...)."""
    name = _name(n)
    if n.op == "call_method" and name.endswith("_") and not name.endswith("__"):
        return True
    if n.op == "call_function" and name.endswith("_") and not name.startswith("_"):
        return True
    return n.kwargs.get("inplace", False) is True or "out" in n.kwargs


def _superoptimize(program, be):
    from . import superoptimize
    return superoptimize(program, target=be.target, time_budget=be.time_budget, cache=be.cache,
                         name="torch.compile region", **be.options)


def _example(torch, a):
    """A real tensor like the value of node `a` (shape, strides, dtype), for tracing a region."""
    if not isinstance(a, torch.fx.Node) or _meta(a) is None:
        raise _mugraph.Error("a region input %r has no known shape" % (a,))
    shape, stride, dtype = _meta(a)
    return torch.empty_strided(shape, stride, dtype=dtype, device="cpu").uniform_(0.5, 1.5)


def _supported(torch, node, modules):
    """Whether the backend may put `node` in a mugraph region."""
    kind = classify(torch, node, modules)
    if kind is None or not _tensor_ok(node):
        return False
    numbers = [a for a in node.args if isinstance(a, (int, float)) and not isinstance(a, bool)]
    for a in node.args:
        if isinstance(a, torch.fx.Node) and not _tensor_ok(a):
            return False
    if kind in ("add", "sub") and numbers:
        return False
    if kind in ("mul", "div") and numbers and (kind == "div" and node.args[0] in numbers):
        return False
    if kind == "pow":
        return len(node.args) > 1 and node.args[1] == 2
    if kind in ("softmax", "sum", "mean"):  # (classify already refused other keywords)
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        if isinstance(dim, (tuple, list)) and len(dim) == 1:
            dim = dim[0]
        return isinstance(dim, int) and len(node.args) <= (2 if kind == "softmax" else 3)
    if kind == "linear":
        w = node.args[1] if len(node.args) > 1 else None
        # The weight must be a region input (then read transposed in place).
        return isinstance(w, torch.fx.Node) and classify(torch, w, modules) is None
    return True


def backend(target="cpu", time_budget=None, cache=True, **options):
    """A torch.compile backend that superoptimizes the regions mugraph supports:
    `torch.compile(model, backend=mg.backend(target="cpu", time_budget=10))`. Options are
    superoptimize()'s. `.report()` lists the regions replaced and kept."""
    return Backend(target, time_budget, cache, **options)
