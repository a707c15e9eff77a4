# verifier fuzz (an early run of bench/verify_fuzz --seed 1, trial 1158, minimized): CRASH
# (SIGSEGV) in screen mode:
# `mugraph verify --screen crash_dead_thread_graph.ref.mu crash_dead_thread_graph.cand.mu`.
# The candidate's block graph has a thread graph whose output nobody reads; the screen's
# demand-driven evaluation gives it no demand, and eval_block_node (src/verify/field_eval.cc,
# thread-graph branch) indexes its empty demand (td.box[...]) where the compute branch checks
# d.tiles.plan[k] first. Certify does not crash. Expected: PASSED (the pair is equal).
# Fixed in de4632e; kept as a regression pair (FuzzVerifier.SavedCrashPairsAreAccepted).
input X : f32[4, 8]
Y = neg(X)
output Y
