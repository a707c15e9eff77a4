"""The graph-rewrite environment from Python (issue 22): mg.import_hlo and mg.Env with HloEnv's
interface, on JAX's attention module (tests/data/hlo). The cost-model oracle keeps the
decisions independent of timing noise; the states are checked against the program by the
verifier."""
import pytest

import mugraph as mg


@pytest.fixture(scope="module")
def attention(request):
    import pathlib
    return mg.import_hlo(pathlib.Path(__file__).resolve().parents[2] / "tests/data/hlo/attention.hlo")


def test_import_hlo_and_its_errors(attention, data):
    assert attention.kernels() == 7
    with pytest.raises(mg.Error, match=r"max_reduce.hlo:12: reduce_max.7 = reduce"):
        mg.import_hlo(data / "hlo" / "max_reduce.hlo")
    with pytest.raises(mg.Error, match="cannot read"):
        mg.import_hlo(data / "hlo" / "missing.hlo")


def test_env_alternatives_apply_evaluate_hash(attention):
    env = mg.Env(attention, oracle="model", region_budget=12, simplify=False)
    h0 = env.dag_hash()
    t0 = env.evaluate()
    nodes = env.get_alternatives()
    assert len(nodes) == 1 and nodes[0]["pass"] == "fusion"
    node = nodes[0]
    assert node["ops"] == list(range(7)) and node["outputs"] and node["options"]
    assert all(o["verdict"].startswith("VERIFIED") for o in node["options"])
    # The option is proven equal to the region; the state after apply, to the program.
    assert mg.verify(node["region"], node["options"][0]["graph"]).verified
    applied = env.apply([1])
    assert applied["actions"] == [1] and applied["rejected"] == []
    assert env.dag_hash() != h0
    assert mg.verify(attention, env.state).verified
    assert env.evaluate() < t0  # the cost model prefers the fused kernel
    with pytest.raises(mg.Error, match="actions for"):
        env.apply([1, 1, 1])
    with pytest.raises(TypeError, match="action 0 is '1', expected an int"):
        env.apply(["1"])
    env.reset()
    assert env.dag_hash() == h0


def test_env_strategies(attention):
    env = mg.Env(attention, oracle="model", region_budget=12, simplify=False)
    results = {s: env.run_strategy(s) for s in ("pick-first", "greedy", "beam", "mcts")}
    for name, r in results.items():
        assert r["best_seconds"] < r["start_seconds"], name
        assert r["decisions"] and r["evaluations"] >= 2, name
        assert mg.verify(attention, r["best"]).verified, name
    with pytest.raises(mg.Error, match="pick-first, greedy, beam or mcts"):
        env.run_strategy("random")
    with pytest.raises(mg.Error, match="unknown oracle"):
        mg.Env(attention, oracle="psychic")
    with pytest.raises(mg.Error, match="runtime oracle measures on the CPU"):
        mg.Env(attention, target="h100")
