"""Writes the HLO test data of mugraph's HLO import (issue 22): for each function below, NAME.hlo
(jax.jit(f).lower(*args).compiler_ir("hlo").as_hlo_text()) and NAME.json (the seeded inputs and
JAX's f32 outputs, each {"shape", "data" row-major}: the reference the import test compares the
interpreter with). Functions the
import must refuse are in REFUSED: NAME.hlo only, with the message expected in NAME.json.

    .venv/bin/pip install "jax[cpu]" && .venv/bin/python tests/data/hlo/make_hlo.py

Reduced shapes (a few KB per file); the files are committed, so the tests need no JAX."""
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
f32 = jnp.float32


def rms(x, g):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * g


def layer_norm(x, g, b):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b


def attention(q, k, v):  # [.., t, d]
    s = q @ jnp.swapaxes(k, -1, -2) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    return jax.nn.softmax(s, axis=-1) @ v


def heads(x, h):  # [t, d] -> [h, t, d/h]
    t, d = x.shape
    return x.reshape(t, h, d // h).transpose(1, 0, 2)


def merge(x):  # [h, t, e] -> [t, h*e]
    h, t, e = x.shape
    return x.transpose(1, 0, 2).reshape(t, h * e)


def mha(x, wq, wk, wv, wo, h=2):
    return merge(attention(heads(x @ wq, h), heads(x @ wk, h), heads(x @ wv, h))) @ wo


def decoder(x, n1, wq, wk, wv, wo, n2, wg, wu, wd):
    x = x + mha(rms(x, n1), wq, wk, wv, wo)
    h = rms(x, n2)
    return x + (jax.nn.silu(h @ wg) * (h @ wu)) @ wd


def encoder(x, wq, wk, wv, wo, g1, b1, w1, bb1, w2, bb2, g2, b2):
    x = layer_norm(x + mha(x, wq, wk, wv, wo), g1, b1)
    return layer_norm(x + jax.nn.gelu(x @ w1 + bb1) @ w2 + bb2, g2, b2)


T, D, H, F = 8, 16, 2, 32  # tokens, model dim, heads, MLP hidden
W = lambda *s: ("w", s)    # a weight (scaled 1/sqrt(fan-in)) / an activation / a gain near 1
A = lambda *s: ("a", s)
G = lambda *s: ("g", s)
dec_args = [A(T, D), G(D), W(D, D), W(D, D), W(D, D), W(D, D), G(D), W(D, F), W(D, F), W(F, D)]

CASES = {
    "mlp": (lambda x, w1, w2: jax.nn.relu(x @ w1) @ w2, [A(T, D), W(D, F), W(F, D)]),
    "mlp_bias": (lambda x, w1, b1, w2: jax.nn.relu(x @ w1 + b1) @ w2, [A(T, D), W(D, F), A(F), W(F, D)]),
    "swiglu": (lambda x, wg, wu, wd: (jax.nn.silu(x @ wg) * (x @ wu)) @ wd, [A(T, D), W(D, F), W(D, F), W(F, D)]),
    "geglu_tanh": (lambda x, wg, wu, wd: (jax.nn.gelu(x @ wg) * (x @ wu)) @ wd, [A(T, D), W(D, F), W(D, F), W(F, D)]),
    "sigmoid_gate": (lambda x, w: jax.nn.sigmoid(x @ w) * x, [A(T, D), W(D, D)]),
    "tanh": (lambda x, w: jnp.tanh(x @ w), [A(T, D), W(D, D)]),
    "rms_norm_matmul": (lambda x, g, w: rms(x, g) @ w, [A(T, D), G(D), W(D, F)]),
    "layer_norm_matmul": (lambda x, g, b, w: layer_norm(x, g, b) @ w, [A(T, D), G(D), A(D), W(D, F)]),
    "softmax": (lambda x: jax.nn.softmax(x, axis=-1), [A(T, D)]),
    "attention": (attention, [A(2, T, D), A(2, T, D), A(2, T, D)]),
    "multi_head_attention": (mha, [A(T, D), W(D, D), W(D, D), W(D, D), W(D, D)]),
    "gqa": (lambda q, k, v: attention(q, jnp.repeat(k, 2, axis=0), jnp.repeat(v, 2, axis=0)),
            [A(4, T, D), A(2, T, D), A(2, T, D)]),
    "qknorm_attention": (lambda q, k, v, gq, gk: attention(rms(q, gq), rms(k, gk), v),
                         [A(2, T, D), A(2, T, D), A(2, T, D), G(D), G(D)]),
    "lora": (lambda x, w, a, b: x @ w + (x @ a) @ b, [A(T, D), W(D, D), W(D, 4), W(4, D)]),
    "ntrans_norm": (lambda x, w: (x / jnp.sqrt(jnp.sum(x * x, axis=-1, keepdims=True))) @ w, [A(T, D), W(D, D)]),
    "batched_dot": (lambda a, b: jnp.einsum("bik,bkj->bij", a, b), [A(3, T, D), A(3, D, 4)]),
    "contract_two_dims": (lambda a, b: jnp.einsum("ijk,jkl->il", a, b), [A(4, 3, 5), A(3, 5, 6)]),
    "transpose_out": (lambda x, w: (x @ w).T, [A(T, D), W(D, F)]),
    "sum_all": (lambda x, w: jnp.sum(x @ w, axis=(0, 1), keepdims=True) * (x @ w), [A(T, D), W(D, F)]),
    "two_outputs": (lambda x, w: (x @ w, jnp.exp(x)), [A(T, D), W(D, F)]),
    "decoder_layer": (decoder, dec_args),
    "decoder_stack": (lambda x, *p: decoder(decoder(x, *p[:9]), *p[9:]), dec_args + dec_args[1:]),
    "bert_encoder": (encoder, [A(T, D), W(D, D), W(D, D), W(D, D), W(D, D), G(D), A(D), W(D, F), A(F), W(F, D), A(D), G(D), A(D)]),
}
REFUSED = {
    "max_reduce": (lambda x: jnp.max(x, axis=-1), [A(T, D)], "an output is a max reduction"),
    "clip": (lambda x: jnp.clip(x, -1.0, 1.0), [A(T, D)], "maximum other than with 0 (relu)"),
    "iota_mask": (lambda x: jnp.where(jnp.tril(jnp.ones((T, T), bool)), x, 0.0), [A(T, T)],
                  "element type pred"),
    "int_input": (lambda x: x * 2, [("i", (T, D))], "element type s32"),
}


def draw(rng, spec):
    kind, shape = spec
    if kind == "i":
        return jnp.asarray(rng.integers(-3, 3, shape), dtype=jnp.int32)
    x = rng.standard_normal(shape)
    if kind == "w":
        x = x / np.sqrt(shape[0])
    if kind == "g":
        x = 1.0 + 0.1 * x
    return jnp.asarray(x, dtype=f32)


def write(name, fn, specs, refused=None):
    rng = np.random.default_rng(sum(map(ord, name)))
    args = [draw(rng, s) for s in specs]
    (HERE / (name + ".hlo")).write_text(jax.jit(fn).lower(*args).compiler_ir("hlo").as_hlo_text())
    if refused is not None:
        data = {"error": refused}
    else:
        outs = fn(*args)
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        flat = lambda a: {"shape": list(np.shape(a)),  # row-major values, 8 significant digits
                          "data": [float("%.8g" % v) for v in np.asarray(a, np.float64).ravel()]}
        data = {"inputs": [flat(a) for a in args], "outputs": [flat(o) for o in outs]}
    (HERE / (name + ".json")).write_text(json.dumps(data))


def inputs(name):
    """The seeded inputs of CASES[name] (what the .json holds): bench/model/xla_ref.py times
    XLA on them."""
    rng = np.random.default_rng(sum(map(ord, name)))
    return [draw(rng, s) for s in CASES[name][1]]


if __name__ == "__main__":
    for name, (fn, specs) in CASES.items():
        write(name, fn, specs)
    for name, (fn, specs, why) in REFUSED.items():
        write(name, fn, specs, why)
    print("wrote %d + %d cases to %s (jax %s)" % (len(CASES), len(REFUSED), HERE, jax.__version__))
