# Search options per paper benchmark, shared by bench/cpu/run.sh and bench/gpu/run.sh (sourced):
# single graph-defined kernels (Table 5's setting), LoRA with predefined ops only (its
# concat-matmul form). nTrans: 8 rows, so 8 blocks of whole rows (below Mirage's 32-block
# minimum) and no for-loop (both RMS norms need a full row before the next step). QKNorm:
# both norms and FlashAttention in one block graph take 18 block ops (accumulators included).
declare -A opts=(
  [rms_norm_matmul]="--max-kernel-ops 1 --max-block-ops 9"
  [gated_mlp]="--max-kernel-ops 1 --max-block-ops 7"
  [gqa]="--max-kernel-ops 1 --max-block-ops 8"
  [lora]="--max-kernel-ops 2 --max-graph-defined 0"
  [ntrans]="--max-kernel-ops 1 --max-block-ops 13 --min-blocks 8 --forloop 1"
  [qknorm_attention]="--max-kernel-ops 1 --max-block-ops 18"
)
