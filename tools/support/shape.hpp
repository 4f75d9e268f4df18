#pragma once
// Attention problem shapes on the command line: "B,H,Nq,Nk,D[,causal][,bf16|fp16][,gqa=R]"
// (H = query heads; R = query heads per kv head, H % R == 0), and files of them (one per line, '#'
// comments). Used by sagejit-autotune and sagejit-selftest.
#include <string>
#include <string_view>
#include <vector>

#include "sagejit/types.hpp"
#include "plan/attention_call.hpp"
#include "tuning/problem_key.hpp"

namespace sagejit::tools {

struct AttentionShape {
  int batch = 1, heads_q = 1, seq_q = 1, seq_kv = 1, head_dim = 128;
  int gqa_ratio = 1;  // heads_kv = heads_q / gqa_ratio
  bool causal = false;
  DType dtype = DType::bf16;

  int heads_kv() const { return heads_q / gqa_ratio; }
  // Matrix work of one call: 4·B·H·Nq·Nk·D, halved for causal (docs/ANCHORS.md's convention).
  double operations() const;
  // Canonical text, parseable again: "1,24,4608,4608,128,bf16", "4,32,4096,4096,128,causal,bf16,gqa=4".
  std::string text() const;
  // The call's sizes and flags for the attention plan (no pointers; sm_scale 1/sqrt(D)).
  AttentionCall call() const;
  // The tuning key of this shape on `arch`.
  ProblemKey problem_key(const std::string& arch) const;
};

// Throws Error(invalid_argument) naming `what` (e.g. "--shape"), the bad field and the accepted form.
AttentionShape parse_shape(std::string_view text, std::string_view what);
// One shape per non-empty line; '#' starts a comment. Errors name "<path>:<line>". A missing file is an error.
std::vector<AttentionShape> read_shapes_file(const std::string& path);
// A recorded miss (tuning key) as a shape to measure: B=1, H chosen so the call is big enough to time
// (at least 8 query heads, a multiple of the gqa ratio).
AttentionShape shape_of_problem(const ProblemKey& key);

}  // namespace sagejit::tools
