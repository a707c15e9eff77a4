# C split over a 2x2 grid (rows of A by x, columns of B by y) and over K by the for-loop.
input A : f32[8, 8]
input B : f32[8, 8]
C = graph_defined(A, B, grid=[2, 2, 1], forloop=2) {
  a = input_iterator(A, imap={x:0}, fmap=1)
  b = input_iterator(B, imap={y:1}, fmap=0)
  m = matmul(a, b)
  acc = accumulator(m, fmap=phi)
  output_saver(acc, omap={x:0, y:1})
}
output C
