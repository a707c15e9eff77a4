"""mugraph: a multi-level superoptimizer for tensor programs (Python API).

    import mugraph as mg
    g = mg.Graph()
    X = g.input((16, 64), "f32", name="X")
    W = g.input((64, 32), "f32", name="W")
    g.output(g.matmul(g.rms_norm(X, dim=1), W))
    best = mg.superoptimize(g, target="cpu", time_budget=20)
    print(best.verdict, best.speedup)
    Y, = best(x, w)          # numpy arrays or torch CPU tensors

Programs come from `load(path)`, `parse(text)` or the `Graph` builder; `verify(ref, cand)`
proves equivalence; `superoptimize(...)` runs `mugraph optimize` (search, measure, certify) with
the persistent result cache. Errors are `mugraph.Error` (a ValueError) naming the place and
the reason.
"""
import os

from ._mugraph import Error, KernelGraph, Verdict  # noqa: F401
from . import _mugraph
from ._builder import Graph, Tensor  # noqa: F401
from ._result import Result  # noqa: F401
from ._torch import from_torch  # noqa: F401
from ._compile import backend  # noqa: F401

__all__ = ["Error", "backend", "from_torch", "Graph", "KernelGraph", "Result", "Tensor", "Verdict", "load", "parse",
           "verify", "superoptimize", "version", "targets"]


def version():
    """mugraph's version: the project version and the git commit it was built from."""
    return _mugraph.version()


def targets():
    """The target names: a100, h100, h200, cpu."""
    return list(_mugraph.targets())


def load(path):
    """A program (uGraph) from a .mu text or .json file."""
    return _mugraph.load(str(path))


def parse(text, source="<string>"):
    """A program (uGraph) from its text form; errors say `source:line:col: reason`."""
    return _mugraph.parse(text, source)


def _graph(g, what):
    if isinstance(g, Graph):
        return g.build()
    if isinstance(g, KernelGraph):
        return g
    raise TypeError("%s: expected a mugraph.Graph or a KernelGraph (from load/parse), got %s"
                    % (what, type(g).__name__))


def verify(ref, cand, delta=1e-9, seed=0, screen=False):
    """Checks that `cand` computes what `ref` computes: the verdict (kind VERIFIED with a bound
    `delta`, PASSED, NOT EQUIVALENT, UNSTABLE, UNPROVED, INCONCLUSIVE, ERROR). `screen=True`
    runs one cheap test on sampled entries (what the search uses) instead of certifying."""
    if not 0 < delta < 1:
        raise Error("verify(): delta must be in (0, 1), got %r" % (delta,))
    return _mugraph.verify(_graph(ref, "verify(ref)"), _graph(cand, "verify(cand)"),
                           float(delta), int(seed), bool(screen))


def superoptimize(program, target="cpu", time_budget=None, cache=True, top=8, runs=10,
                  accept_unproved=False, name="python", progress=True, **options):
    """Runs mugraph's optimize pipeline on `program`: search (planned from the program unless a
    space option such as max_block_ops is given), rank by the cost model, measure on the
    target's device (the CPU for "cpu"), certify. Returns a Result: `.best` (the uGraph handed
    out: the program itself when nothing faster was proven), `.verdict`, `.speedup`,
    `.report`, `.from_cache`, and `result(*tensors)` runs it. `cache=False` (or
    MUGRAPH_NO_CACHE=1) bypasses the persistent result cache ($MUGRAPH_CACHE_DIR/results.sqlite,
    the one `mugraph optimize` uses). `progress=False` hides the search's progress line (shown
    on stderr only when it is a terminal). Search options: the CLI's flags with underscores (max_kernel_ops, max_block_ops, max_graph_defined, grid_sizes,
    forloop, min_blocks, max_blocks, max_grid_dims, threads, seed)."""
    g = _graph(program, "superoptimize(program)")
    if target not in _mugraph.targets():
        raise Error("superoptimize(): unknown target '%s' (known: %s)"
                    % (target, ", ".join(_mugraph.targets())))
    budget = 0.0 if time_budget is None else float(time_budget)
    if time_budget is not None and not budget > 0:
        raise Error("superoptimize(): time_budget must be > 0 seconds, got %r" % (time_budget,))
    if os.environ.get("MUGRAPH_NO_CACHE", "") not in ("", "0"):
        cache = False
    out = _mugraph.optimize(g, target, budget, int(top), int(runs), bool(accept_unproved),
                            bool(cache), str(name), bool(progress), options)
    return Result(program if isinstance(program, Graph) else g, out)
