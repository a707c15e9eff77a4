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

__all__ = ["Env", "Error", "backend", "from_torch", "Graph", "KernelGraph", "Result", "Tensor", "Verdict",
           "import_hlo", "load", "parse", "verify", "superoptimize", "version", "targets"]


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


def import_hlo(path):
    """The entry computation of an XLA HLO text module (what JAX prints:
    jax.jit(f).lower(*args).compiler_ir("hlo").as_hlo_text()) as a KernelGraph, as
    `mugraph hlo` imports it."""
    return _mugraph.import_hlo(os.fspath(path))


class Env:
    """The graph-rewrite environment (HloEnv) over a whole model, as `mugraph model` runs it:

        env = mg.Env(mg.import_hlo("decoder_layer.hlo"), region_budget=8)
        nodes = env.get_alternatives()   # [{"pass", "ops", "inputs", "outputs", "options"}]
        env.apply([1] * len(nodes))      # one action per node: 0 keeps, k takes option k
        t = env.evaluate()               # T(state), seconds (the oracle)
        h = env.dag_hash()               # structural hash of the state
        best = env.run_strategy("beam")  # from the program: best state, decisions, evaluations

    Options are `mugraph model`'s flags: target ("cpu"), oracle ("runtime": timed on the CPU;
    "model": the cost model), region_budget and search_budget (seconds the superoptimizer may
    search one region, and all of them), max_region_ops, options (VERIFIED uGraphs per region),
    runs (timed samples per state), seed, simplify (the algebraic-simplification pass).
    get_alternatives() searches the regions it meets (seconds each; cached)."""

    def __init__(self, program, target="cpu", oracle="runtime", region_budget=20.0,
                 search_budget=600.0, max_region_ops=12, options=2, runs=10, seed=0,
                 simplify=True):
        g = _graph(program, "Env(program)")
        if target not in _mugraph.targets():
            raise Error("Env(): unknown target '%s' (known: %s)" % (target, ", ".join(_mugraph.targets())))
        self._env = _mugraph.Env(g, target, oracle, float(region_budget), float(search_budget),
                                 int(max_region_ops), int(options), int(runs), int(seed), bool(simplify))

    @property
    def state(self):
        """The current state (a KernelGraph)."""
        return self._env.state

    @property
    def oracle(self):
        return self._env.oracle

    def get_alternatives(self):
        return self._env.get_alternatives()

    def apply(self, actions):
        """One action per alternative node (0 keeps, k takes option k); the result becomes the
        state. Returns {"actions": taken (a rejected one reads 0), "rejected": why, "pruned_ops"}."""
        import numbers
        acts = list(actions)
        for i, a in enumerate(acts):
            if isinstance(a, bool) or not isinstance(a, numbers.Integral):
                raise TypeError("Env.apply(): action %d is %r, expected an int" % (i, a))
        return self._env.apply([int(a) for a in acts])

    def evaluate(self):
        return self._env.evaluate()

    def dag_hash(self):
        return self._env.dag_hash()

    def reset(self):
        """Back to the program (the searched regions and timed states stay cached)."""
        self._env.reset()

    def run_strategy(self, name):
        """pick-first, greedy, beam or mcts from the program (the env's own state is left as it
        is): a dict with "best" (a KernelGraph), "best_seconds" and "start_seconds" (the
        oracle's T), "decisions" (actions, taken options and their verdicts, rejected ones,
        hash, T), "evaluations" and "seconds" (wall time, region searches included). No
        whole-model check here: mg.verify(program, r["best"]) is one; `mugraph model` runs it."""
        return self._env.run_strategy(str(name))
