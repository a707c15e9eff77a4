# nTrans as one kernel: a block per row, both norms inside, the element-wise tail in a thread graph.
input H : f16[4, 64]
input X : f16[4, 64]
input alpha : f16[4, 64]
O = graph_defined(H, X, alpha, grid=[4, 1, 1], forloop=1) {
  h = input_iterator(H, imap={x:0}, fmap=phi)
  x = input_iterator(X, imap={x:0}, fmap=phi)
  a = input_iterator(alpha, imap={x:0}, fmap=phi)
  hs = square(h)
  hss = sum(hs, dim=1, group=64)
  y = thread_graph(h, hss, x, a) {
    hms = scale(hss, factor=1/64)
    hr = sqrt(hms)
    hn = div(h, hr)
    d = sub(hn, x)
    ad = mul(a, d)
    y = add(x, ad)
    output y
  }
  ys = square(y)
  yss = sum(ys, dim=1, group=64)
  o = thread_graph(y, yss) {
    yms = scale(yss, factor=1/64)
    yr = sqrt(yms)
    o = div(y, yr)
    output o
  }
  output_saver(o, omap={x:0})
}
output O
