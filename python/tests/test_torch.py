"""mg.from_torch (issue 21 item 3): PyTorch functions and modules to mugraph programs, checked
against torch itself in float64, and the errors for what mugraph cannot express."""
import pytest

import mugraph as mg

torch = pytest.importorskip("torch")
F = torch.nn.functional


def rel_err(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm()).item()


def run(fn, *args, **opts):
    g = mg.from_torch(fn, *args)
    r = mg.superoptimize(g, target="cpu", cache=False, top=2, runs=2,
                         **(opts or dict(max_kernel_ops=1, max_graph_defined=0)))
    assert r.verified
    return g, r, r(*args)


def test_rms_norm_matmul_function():
    def f(x, g, w):
        return (x / torch.sqrt(torch.mean(x * x, dim=1, keepdim=True)) * g) @ w
    gen = torch.Generator().manual_seed(0)
    x, gam, w = torch.randn(8, 64, generator=gen), torch.rand(64, generator=gen), torch.randn(64, 32, generator=gen)
    g, r, (y,) = run(f, x, gam, w, max_kernel_ops=2, max_graph_defined=0)
    assert "sum(" in g.text() and "matmul(" in g.text() and "sqrt(" in g.text()
    assert rel_err(y, f(x.double(), gam.double(), w.double())) < 1e-5


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(32, 64, bias=False)
        self.gate = torch.nn.Linear(32, 64, bias=False)
        self.down = torch.nn.Linear(64, 16)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


def test_gated_mlp_module_with_parameters_bound():
    torch.manual_seed(0)
    m = Mlp()
    x = torch.randn(4, 32)
    g, r, (y,) = run(m, x, max_kernel_ops=1, max_graph_defined=0)
    text = g.text()
    # nn.Linear's weight [out, in] is read transposed in place: a strided input, no copy.
    assert "input up_weight : f32[32, 64] strides=[1, 32]" in text
    assert "silu(" in text and "down_bias" in text
    with torch.no_grad():
        want = m.double()(x.double())
    assert rel_err(y, want) < 1e-5
    with pytest.raises(mg.Error, match="expected the function's 1 argument"):
        r(x, x)


def test_attention_with_a_transposed_input_and_softmax():
    def attn(q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) * 0.125, dim=-1) @ v
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 8, 16, generator=gen) for _ in range(3))
    g, r, (o,) = run(attn, q, k, v, max_kernel_ops=1, max_graph_defined=0)
    assert "strides=[128, 1, 16]" in g.text()  # k^T: k's memory, transposed layout
    assert rel_err(o, attn(q.double(), k.double(), v.double())) < 1e-5


def test_transposes_of_computed_tensors_are_transpose_ops():
    # Multi-head attention as a model writes it: the projections' outputs are split into heads
    # and transposed (computed tensors: the transpose op), the result transposed back.
    b, t, d = 2, 4, 8

    def mha(x, wq, wk, wv):
        q, k, v = ((x @ w).view(b, t, 2, d // 2).transpose(1, 2) for w in (wq, wk, wv))
        att = torch.softmax(q @ k.transpose(-1, -2) * 0.25, dim=-1)
        return (att @ v).permute(0, 2, 1, 3).reshape(b, t, d)
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(2, 4, 8, generator=gen) * 0.5
    wq, wk, wv = (torch.randn(8, 8, generator=gen) * 0.3 for _ in range(3))
    g, r, (o,) = run(mha, x, wq, wk, wv, max_kernel_ops=1, max_graph_defined=0)
    assert g.text().count("transpose(") == 5, g.text()
    assert "perm=[0, 2, 1, 3]" in g.text() and "perm=[0, 1, 3, 2]" in g.text()
    assert rel_err(o, mha(x.double(), wq.double(), wk.double(), wv.double())) < 1e-5
    # (x * x).t() too; permute(0, 1) is a copy (its own tensor, as torch's).
    g2, r2, (o2,) = run(lambda a: (a * a).t().permute(0, 1), x[0], max_kernel_ops=1,
                        max_graph_defined=0)
    assert g2.text().count("transpose(") == 2
    assert rel_err(o2, (x[0].double() ** 2).t()) < 1e-6


def test_inputs_returned_and_tensors_returned_twice_are_copies():
    x = torch.randn(4, 6)
    for fn, want in ((lambda a: a, lambda a: (a,)), (lambda a: a.t(), lambda a: (a.t(),)),
                     (lambda a: (lambda y: (y, y))(a * a), lambda a: (a * a, a * a))):
        g, r, outs = run(fn, x)
        for got, ref in zip(outs, want(x.double())):
            assert rel_err(got, ref) < 1e-6


def test_what_mugraph_cannot_express_is_an_error_naming_the_op_and_line():
    def plus_one(x):
        return x + 1.0
    with pytest.raises(mg.Error, match=r"from_torch: File .*test_torch.py.*line \d+.*x \+ 1\.0.*add with a Python number"):
        mg.from_torch(plus_one, torch.randn(4, 4))

    def tanh(x):
        return torch.tanh(x)
    with pytest.raises(mg.Error, match=r"op tanh is not supported by mugraph"):
        mg.from_torch(tanh, torch.randn(4, 4))


    def cube(x):
        return x ** 3
    with pytest.raises(mg.Error, match=r"pow with exponent 3"):
        mg.from_torch(cube, torch.randn(4, 4))

    with pytest.raises(mg.Error, match=r"dtype float64 is not supported"):
        mg.from_torch(lambda x: x * x, torch.randn(4, 4, dtype=torch.float64))
