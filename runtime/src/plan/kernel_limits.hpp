#pragma once
// Limits of the prepare and attention kernels' index arithmetic (kernel_src/prepare.cu,
// attention_sm80.cu, attention_gfx12.hip): element offsets into user tensors and the workspace are
// 64-bit, but sizes travel as int (SjPrepareParams / SjAttentionParams), block indices are int, and
// batch and heads are grid dimensions y/z (at most 65535 on both vendors).
#include <cstdint>

namespace sagejit {

struct AttentionCall;

inline constexpr std::int64_t max_grid_yz = 65535;
inline constexpr std::int64_t max_int32 = 2147483647;
// Token counts stay below half the int range so that tile arithmetic near the end cannot overflow
// (the runner's own safety check, plan/attention_runner.cpp, uses the same bound).
inline constexpr std::int64_t max_sequence = max_int32 / 2;

// Throws Error(unsupported) naming the size that exceeds a limit and the limit.
void check_kernel_limits(const AttentionCall& problem);

}  // namespace sagejit
