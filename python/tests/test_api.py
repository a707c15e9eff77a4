"""The Python package (issue 21 item 1-2): load/parse/builder/text/check, verify, superoptimize,
the result cache, and running the result on numpy arrays and torch CPU tensors, each checked
against an independent reference (numpy/torch in float64) and each error against its message."""
import os
import time

import numpy as np
import pytest

import mugraph as mg

LORA = """input X : f16[4, 32]
input W : f16[32, 64]
input A : f16[32, 4]
input B : f16[4, 64]
Y1 = matmul(X, W)
T = matmul(X, A)
Y2 = matmul(T, B)
O = add(Y1, Y2)
output O
"""
SMALL = dict(max_kernel_ops=2, max_graph_defined=0, top=3, runs=2)


def lora_builder():
    g = mg.Graph()
    X = g.input((4, 32), "f16", name="X")
    W = g.input((32, 64), "f16", name="W")
    A = g.input((32, 4), "f16", name="A")
    B = g.input((4, 64), "f16", name="B")
    Y1 = g.matmul(X, W, name="Y1")
    T = g.matmul(X, A, name="T")
    Y2 = g.matmul(T, B, name="Y2")
    g.output(g.add(Y1, Y2, name="O"))
    return g


def test_version_targets_and_ops():
    assert mg.version().startswith("0.")
    assert mg.targets() == ["a100", "h100", "h200", "cpu"]
    for op in ("matmul", "add", "exp", "sum", "rms_norm", "softmax", "attention"):
        assert hasattr(mg.Graph, op)


def test_load_parse_text_round_trip(examples):
    g = mg.load(examples / "rms_norm_matmul.mu")
    assert [n for n, *_ in g.inputs()] == ["X", "G", "W"]
    assert g.inputs()[2][1:3] == ("f16", (4096, 4096))
    assert mg.parse(g.text()) == g
    g.check("h100")
    assert g.kernels() == 7


def test_parse_errors_name_the_line_and_reason():
    with pytest.raises(mg.Error, match=r"<string>:2:.*matmul: inner dimensions differ"):
        mg.parse("input X : f16[4, 8]\nY = matmul(X, X)\noutput Y\n")
    with pytest.raises(mg.Error, match="no such file|cannot open|cannot read"):
        mg.load("/nonexistent/program.mu")


def test_the_builder_writes_the_program_text():
    g = lora_builder()
    assert g.text() == LORA
    assert g.build() == mg.parse(LORA)
    assert g.build().canonical_hash() == mg.parse(LORA).canonical_hash()


def test_builder_errors_name_the_call():
    g = mg.Graph()
    X = g.input((4, 8), "f32", name="X")
    with pytest.raises(mg.Error, match=r"matmul 'bad': .*inner dimensions differ"):
        g.matmul(X, X, name="bad")
    with pytest.raises(mg.Error, match="unknown op 'conv2d'"):
        g.op("conv2d", X)
    with pytest.raises(mg.Error, match="add: expects 2 input"):
        g.add(X)
    with pytest.raises(mg.Error, match="sum: no attribute 'axis'"):
        g.sum(X, axis=1)
    with pytest.raises(mg.Error, match="dtype must be one of f16, bf16, f32"):
        g.input((4,), "f64")
    with pytest.raises(mg.Error, match="tensor name 'X' is already used"):
        g.input((4,), "f32", name="X")
    with pytest.raises(mg.Error, match="no output"):
        g.text()
    other = mg.Graph()
    with pytest.raises(mg.Error, match="expected a tensor of this graph"):
        other.exp(X)
    # Attributes and composites go through; sum's group defaults to the whole dim, and a
    # negative dim counts from the last (as in numpy and torch).
    full = g.sum(X, dim=-1, name="full")
    with pytest.raises(mg.Error, match=r"scale: factor='x' is not a finite number"):
        g.scale(X, factor="x")
    with pytest.raises(mg.Error, match=r"input\(\): shape must be a tuple of ints"):
        g.input(4, "f32")
    s = g.sum(X, dim=1, group=8)
    r = g.scale(g.sqrt(g.scale(s, factor=0.125)), factor=2)
    g.output(g.rms_norm(X, dim=1), r, full)
    assert "factor=1/8" in g.text() and "factor=2/1" in g.text()
    assert "full = sum(X, dim=1, group=8)" in g.text()
    g.check("cpu")


def test_verify_proves_and_refutes():
    ref = mg.parse(LORA)
    assoc = mg.parse(LORA.replace("T = matmul(X, A)\nY2 = matmul(T, B)",
                                  "T = matmul(A, B)\nY2 = matmul(X, T)"))
    v = mg.verify(ref, assoc)
    assert v.kind == "VERIFIED" and v.verified and v.accepted
    assert v.delta is not None and v.delta <= 1e-9
    wrong = mg.parse(LORA.replace("O = add(Y1, Y2)", "O = sub(Y1, Y2)"))
    w = mg.verify(ref, wrong)
    assert w.kind == "NOT EQUIVALENT" and not w.accepted
    s = mg.verify(ref, assoc, screen=True)
    assert s.kind == "PASSED"
    with pytest.raises(TypeError, match="expected a mugraph.Graph or a KernelGraph"):
        mg.verify(LORA, assoc)


def reference(x, w, a, b):
    f = lambda t: np.asarray(t, dtype=np.float64)
    return f(x) @ f(w) + (f(x) @ f(a)) @ f(b)


def test_superoptimize_then_run_on_numpy():
    r = mg.superoptimize(mg.parse(LORA), target="cpu", cache=False, **SMALL)
    assert r.verified and not r.from_cache
    assert r.chosen in r.report
    assert "program" in r.report
    rng = np.random.default_rng(0)
    x, w, a, b = (rng.uniform(-1, 1, s).astype(np.float16)
                  for s in ((4, 32), (32, 64), (32, 4), (4, 64)))
    (o,) = r(x, w, a, b)
    assert o.shape == (4, 64) and o.dtype == np.float16
    want = reference(x, w, a, b)
    assert np.linalg.norm(o.astype(np.float64) - want) <= 1e-2 * np.linalg.norm(want)


def test_run_on_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    r = mg.superoptimize(lora_builder(), target="cpu", cache=False, **SMALL)
    g = torch.Generator().manual_seed(0)
    x, w, a, b = (torch.rand(s, generator=g, dtype=torch.float32).sub(0.5).to(torch.float16)
                  for s in ((4, 32), (32, 64), (32, 4), (4, 64)))
    (o,) = r(x, w, a, b)
    assert isinstance(o, torch.Tensor) and o.dtype == torch.float16 and tuple(o.shape) == (4, 64)
    want = reference(x.numpy(), w.numpy(), a.numpy(), b.numpy())
    err = np.linalg.norm(o.double().numpy() - want) / np.linalg.norm(want)
    assert err <= 1e-2
    # Wrong tensors: each error names the input and what was expected.
    with pytest.raises(mg.Error, match=r"input 0 \('X'\): shape \(4, 33\), expected X f16\[4, 32\]"):
        r(torch.zeros(4, 33, dtype=torch.float16), w, a, b)
    with pytest.raises(mg.Error, match=r"input 1 \('W'\): dtype float32, expected W f16\[32, 64\]"):
        r(x, w.float(), a, b)
    with pytest.raises(mg.Error, match=r"input 1 \('W'\): strides .*contiguous"):
        r(x, torch.zeros(64, 32, dtype=torch.float16).t(), a, b)
    with pytest.raises(mg.Error, match=r"expected 4 input\(s\) \(X, W, A, B\), got 3"):
        r(x, w, a)
    with pytest.raises(mg.Error, match=r"input 2 \('A'\): a list; expected a numpy array"):
        r(x, w, [[0.0]], b)


def test_numpy_errors():
    r = mg.superoptimize(mg.parse(LORA), target="cpu", cache=False, **SMALL)
    x = np.zeros((4, 32), np.float32)
    w, a, b = np.zeros((32, 64), np.float16), np.zeros((32, 4), np.float16), np.zeros((4, 64), np.float16)
    with pytest.raises(mg.Error, match=r"input 0 \('X'\): dtype float32, expected X f16\[4, 32\] \(numpy float16\)"):
        r(x, w, a, b)


def test_the_second_superoptimize_comes_from_the_cache(monkeypatch):
    monkeypatch.delenv("MUGRAPH_NO_CACHE", raising=False)
    t0 = time.perf_counter()
    first = mg.superoptimize(mg.parse(LORA), target="cpu", **SMALL)
    t1 = time.perf_counter()
    second = mg.superoptimize(mg.parse(LORA), target="cpu", **SMALL)
    t2 = time.perf_counter()
    assert not first.from_cache and second.from_cache
    assert second.best == first.best and second.verdict == first.verdict
    assert second.report == first.report
    assert t2 - t1 <= 0.1, "cache hit took %.3f s (first run %.3f s)" % (t2 - t1, t1 - t0)
    # The CLI reads the same file: `mugraph cache ls` would list it; cache=False searches.
    third = mg.superoptimize(mg.parse(LORA), target="cpu", cache=False, **SMALL)
    assert not third.from_cache
    monkeypatch.setenv("MUGRAPH_NO_CACHE", "1")
    assert not mg.superoptimize(mg.parse(LORA), target="cpu", **SMALL).from_cache


def test_ctrl_c_stops_the_search_and_raises_keyboard_interrupt(examples):
    import signal
    import threading
    g = mg.load(examples / "rms_norm_matmul.mu")  # a search that would run its whole budget
    timer = threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            mg.superoptimize(g, target="cpu", time_budget=60)
    finally:
        timer.cancel()
    took = time.perf_counter() - t0
    assert 2.0 <= took < 12, "Ctrl-C after 2 s stopped the search after %.1f s" % took
    # The package still works after it.
    assert mg.superoptimize(mg.parse(LORA), target="cpu", **SMALL).verified


def test_a_program_naming_a_tensor_t1_is_searched():
    # Found by a new user: the builder's and from_torch's names (t1, t2, ...) met a search's
    # automatic names and aborted the process.
    r = mg.superoptimize(mg.parse("input a : f32[4, 8]\nt1 = softmax(a, dim=1)\noutput t1\n"),
                         target="cpu", time_budget=3)
    x = np.random.default_rng(0).uniform(-1, 1, (4, 8)).astype(np.float32)
    (y,) = r(x)
    e = np.exp(x.astype(np.float64))
    assert np.abs(y - e / e.sum(axis=1, keepdims=True)).max() < 1e-6


def test_more_errors_a_new_user_met():
    g = mg.Graph()
    X = g.input((4, 8), "f32", name="X")
    with pytest.raises(mg.Error, match="dim=2 is out of range"):
        g.sum(X, dim=2)
    with pytest.raises(mg.Error, match="factor=inf is not a finite number"):
        g.scale(X, factor=float("inf"))
    g.output(g.exp(X))
    g.check()  # the CPU by default
    torch = pytest.importorskip("torch")
    with pytest.raises(mg.Error, match="example input 0 is a ndarray; give torch tensors"):
        mg.from_torch(lambda a: a * a, np.zeros((2, 2), np.float32))
    with pytest.raises(mg.Error, match="takes 2 argument\\(s\\), 1 example input\\(s\\) given"):
        mg.from_torch(lambda a, b: a * b, torch.zeros(2, 2))
    r = mg.superoptimize(mg.parse(LORA), target="cpu", cache=False, **SMALL)
    x = torch.zeros(4, 32, dtype=torch.float16)
    w, a, b = (torch.zeros(s, dtype=torch.float16) for s in ((32, 64), (32, 4), (4, 64)))
    with pytest.raises(mg.Error, match="input 0 \\('X'\\): a sparse_coo tensor"):
        r(x.to_sparse(), w, a, b)


def test_option_errors():
    g = mg.parse(LORA)
    with pytest.raises(TypeError, match="unknown option 'max_ops'"):
        mg.superoptimize(g, max_ops=3)
    with pytest.raises(mg.Error, match="unknown target 'tpu'"):
        mg.superoptimize(g, target="tpu")
    with pytest.raises(mg.Error, match="time_budget must be > 0"):
        mg.superoptimize(g, time_budget=0)
