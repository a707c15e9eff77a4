# A row "softmax" of silu over 64 columns: every entry brings its own denominator 1 + exp(-x), so
# the row sum's formal denominator has 2^64 terms: the group-ring test gives up (over its term
# limit) and Theorem 2's bound is vacuous: certify says PASSED with no bound.
input X : f32[512, 64]
E = silu(X)
D = sum(E, dim=1, group=64)
Y = div(E, D)
output Y
