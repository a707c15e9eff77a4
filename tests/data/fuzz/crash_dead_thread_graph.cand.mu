# The candidate of crash_dead_thread_graph.ref.mu: a dead thread graph d in the block graph.
input X : f32[4, 8]
Y = graph_defined(X, grid=[4, 1, 1], forloop=1) {
  x = input_iterator(X, imap={x:0}, fmap=phi)
  y = neg(x)
  d = thread_graph(x) {
    d = exp(x)
    output d
  }
  output_saver(y, omap={x:0})
}
output Y
