#include "api/attention_problem.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/ranges.h>

#include "plan/attention_plan.hpp"
#include "core/error.hpp"
#include "core/kernel_inputs.hpp"
#include "common/key_mask.h"

namespace sagejit {
namespace {

// Position of each logical dimension in the caller's order.
struct DimOrder {
  int batch, heads, tokens, channels;
  std::array<const char*, 4> names;  // for messages: "B", "H", "N", "D" in the caller's order
};

DimOrder order_of(Layout layout) {
  if (layout == Layout::HND) return {0, 1, 2, 3, {"B", "H", "N", "D"}};
  return {0, 2, 1, 3, {"B", "N", "H", "D"}};
}

void check_layout(Layout layout) {
  const int value = static_cast<int>(layout);
  if (value != static_cast<int>(Layout::HND) && value != static_cast<int>(Layout::NHD))
    fail(ErrorCode::invalid_argument, "options.layout {} is not one of [HND (0), NHD (1)]", value);
}

bool known_dtype(DType dtype) { return dtype_info(dtype) != nullptr; }

std::string dtype_name(DType dtype) {
  return known_dtype(dtype) ? std::string(to_string(dtype)) : fmt::format("<unknown dtype {}>", static_cast<int>(dtype));
}

void check_not_null(const TensorView& tensor, const char* name) {
  if (tensor.data == nullptr) fail(ErrorCode::invalid_argument, "{}.data is null; pass a device pointer", name);
}

void check_sizes_and_strides(const TensorView& tensor, const char* name, const DimOrder& order) {
  for (int i = 0; i < 4; ++i)
    if (tensor.shape[i] < 1)
      fail(ErrorCode::invalid_argument, "{}.shape[{}] ({}) is {}; every size must be >= 1", name, i, order.names[i],
           tensor.shape[i]);
  if (tensor.strides[3] != 1)
    fail(ErrorCode::invalid_argument,
         "{}.strides[3] (D) is {}; the head_dim dimension must be contiguous (stride 1), e.g. call .contiguous()",
         name, tensor.strides[3]);
  for (int i = 0; i < 3; ++i)
    if (tensor.strides[i] < 0)
      fail(ErrorCode::invalid_argument, "{}.strides[{}] ({}) is {}; negative strides are not supported", name, i,
           order.names[i], tensor.strides[i]);
  // The largest element offset must be representable: the kernels index with 64-bit strides.
  std::int64_t max_offset = 0;
  for (int i = 0; i < 4; ++i) {
    std::int64_t term = 0;
    if (__builtin_mul_overflow(tensor.strides[i], tensor.shape[i] - 1, &term) ||
        __builtin_add_overflow(max_offset, term, &max_offset) ||
        __builtin_mul_overflow(max_offset + 1, static_cast<std::int64_t>(element_size(tensor.dtype)), &term))
      fail(ErrorCode::invalid_argument, "{}: element offsets (shape [{}], strides [{}]) overflow 64 bits", name,
           fmt::join(tensor.shape, ", "), fmt::join(tensor.strides, ", "));
  }
}

// Two output elements sharing an address would be written by two threads at once. Sufficient
// condition for no overlap: with the dimensions sorted by stride, each stride exceeds the largest
// offset reachable through the smaller ones.
void check_no_overlap(const TensorView& tensor, const char* name) {
  std::array<int, 4> dims{0, 1, 2, 3};
  std::sort(dims.begin(), dims.end(), [&](int a, int b) { return tensor.strides[a] < tensor.strides[b]; });
  std::int64_t reachable = 0;
  for (int dim : dims) {
    if (tensor.shape[dim] == 1) continue;
    if (tensor.strides[dim] <= reachable)
      fail(ErrorCode::invalid_argument,
           "{} has overlapping elements (shape [{}], strides [{}]); the output must not alias itself", name,
           fmt::join(tensor.shape, ", "), fmt::join(tensor.strides, ", "));
    reachable += tensor.strides[dim] * (tensor.shape[dim] - 1);
  }
}

void check_dtypes(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView* out) {
  if (!known_dtype(q.dtype) || !is_kernel_dtype(q.dtype))
    fail(ErrorCode::unsupported, "q.dtype {} is not one of {}", dtype_name(q.dtype), kernel_dtypes_text());
  const auto same = [&](const TensorView& tensor, const char* name) {
    if (tensor.dtype != q.dtype)
      fail(ErrorCode::invalid_argument, "{}.dtype {} does not match q.dtype {}; q, k, v and out must share one dtype",
           name, dtype_name(tensor.dtype), dtype_name(q.dtype));
  };
  same(k, "k");
  same(v, "v");
  if (out != nullptr) same(*out, "out");
}

// The mask's kind in the kernels' terms (kernel_src/common/key_mask.h), and the view of it a call takes.
numerics::KeyMaskView key_mask_view(const KeyMask& mask, std::int64_t batch, std::int64_t heads_q, std::int64_t heads_kv,
                                    std::int64_t seq_kv, int device) {
  const int type = static_cast<int>(mask.type);
  if (type < static_cast<int>(MaskType::none) || type > static_cast<int>(MaskType::fp16))
    fail(ErrorCode::invalid_argument, "options.key_mask.type {} is not one of none (0), boolean (1), fp32 (2), bf16 (3), "
         "fp16 (4)", type);
  if (mask.type == MaskType::none) {
    if (mask.data != nullptr)
      fail(ErrorCode::invalid_argument, "options.key_mask.data is set but its type is none; name the type (boolean, "
                                        "fp32, bf16, fp16) or pass no data");
    if (mask.heads != 1)
      fail(ErrorCode::invalid_argument, "options.key_mask.heads is {} but there is no key mask (type none); leave it 1",
           mask.heads);
    return {};
  }
  if (mask.data == nullptr) fail(ErrorCode::invalid_argument, "options.key_mask.data is null; pass the mask's pointer");
  if (!(mask.shape[0] == batch || mask.shape[0] == 1) || mask.shape[1] != seq_kv)
    fail(ErrorCode::invalid_argument, "options.key_mask.shape [{}, {}] is not [B, Nk] = [{}, {}] (or [1, {}]); {}",
         mask.shape[0], mask.shape[1], batch, seq_kv, seq_kv, accepted_key_masks_text());
  if (mask.strides[0] < 0 || mask.strides[1] < 0)
    fail(ErrorCode::invalid_argument, "options.key_mask.strides [{}, {}] must be >= 0", mask.strides[0], mask.strides[1]);
  if (mask.heads != 1 && mask.heads != heads_q)
    fail(ErrorCode::invalid_argument, "options.key_mask.heads {} is not 1 (one mask for every head) or Hq = {}",
         mask.heads, heads_q);
  if (mask.head_stride < 0)
    fail(ErrorCode::invalid_argument, "options.key_mask.head_stride {} must be >= 0", mask.head_stride);
  if (mask.heads > 1 && heads_q != heads_kv)
    fail(ErrorCode::unsupported, "options.key_mask.heads {}: a mask per head with GQA (Hq {} != Hk {}) is not "
         "supported (K is smoothed and scaled per KV head over its valid keys); pass one mask for every head",
         mask.heads, heads_q, heads_kv);
  if (mask.device != device)
    fail(ErrorCode::invalid_argument, "options.key_mask.device is {} but the call runs on device {}; the mask must be "
         "on the tensors' device", mask.device, device);
  static_assert(static_cast<int>(MaskType::boolean) == SJ_KEY_MASK_BOOL && static_cast<int>(MaskType::fp32) == SJ_KEY_MASK_F32 &&
                static_cast<int>(MaskType::bf16) == SJ_KEY_MASK_BF16 && static_cast<int>(MaskType::fp16) == SJ_KEY_MASK_F16);
  // One row for every batch item is a batch stride of 0 (what torch's expand gives too).
  numerics::KeyMaskView view{mask.data, type, mask.shape[0] == 1 ? 0 : mask.strides[0], mask.strides[1]};
  view.heads = static_cast<int>(mask.heads);
  view.stride_head = mask.heads > 1 ? mask.head_stride : 0;
  return view;
}

bool varlen_requested(const Varlen& varlen) {
  return varlen.cu_seqlens_q != nullptr || varlen.cu_seqlens_k != nullptr || varlen.batch != 0 ||
         varlen.max_seqlen_q != 0 || varlen.max_seqlen_k != 0;
}

// A packed varlen call (options.varlen) onto the call: its sequences as the batch, the longest as the
// lengths, batch strides 0 (every sequence is a row range of the one packed batch item).
void apply_varlen(const Varlen& varlen, const AttentionOptions& options, const TensorView& q, const TensorView& k,
                  AttentionCall& call) {
  if (options.layout != Layout::NHD)
    fail(ErrorCode::invalid_argument, "options.varlen needs options.layout NHD: packed tensors [1, total, H, D]");
  if (options.key_mask.type != MaskType::none || options.key_mask.data != nullptr)
    fail(ErrorCode::unsupported, "options.key_mask with options.varlen is not supported: a varlen call's masked keys "
                                 "are those past each sequence's length (pass the packed sequences without a mask)");
  if (varlen.cu_seqlens_q == nullptr || varlen.cu_seqlens_k == nullptr)
    fail(ErrorCode::invalid_argument, "options.varlen.cu_seqlens_{} is null; a varlen call needs both arrays (int32, "
         "batch + 1 values, on the call's device)", varlen.cu_seqlens_q == nullptr ? "q" : "k");
  if (q.shape[0] != 1)
    fail(ErrorCode::invalid_argument, "q.shape[0] (B) is {}; a varlen call packs its sequences along N of one batch "
         "item: [1, total, H, D]", q.shape[0]);
  if (varlen.batch < 1)
    fail(ErrorCode::invalid_argument, "options.varlen.batch {} must be >= 1 (the number of sequences)", varlen.batch);
  const std::int64_t total_q = q.shape[1], total_k = k.shape[1];
  if (varlen.max_seqlen_q < 1 || varlen.max_seqlen_q > total_q)
    fail(ErrorCode::invalid_argument, "options.varlen.max_seqlen_q {} is not in [1, {}] (the packed rows of q)",
         varlen.max_seqlen_q, total_q);
  if (varlen.max_seqlen_k < 1 || varlen.max_seqlen_k > total_k)
    fail(ErrorCode::invalid_argument, "options.varlen.max_seqlen_k {} is not in [1, {}] (the packed rows of k)",
         varlen.max_seqlen_k, total_k);
  call.batch = varlen.batch;
  call.seq_q = varlen.max_seqlen_q;
  call.seq_kv = varlen.max_seqlen_k;
  for (RowStrides* strides : {&call.q_strides, &call.k_strides, &call.v_strides, &call.out_strides}) strides->batch = 0;
  call.varlen = {varlen.cu_seqlens_q, varlen.cu_seqlens_k, total_q, total_k};
}

RowStrides row_strides(const TensorView& tensor, const DimOrder& order) {
  return {tensor.strides[order.batch], tensor.strides[order.heads], tensor.strides[order.tokens]};
}

AttentionProblem validate(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView* out,
                          const AttentionOptions& options) {
  check_not_null(q, "q");
  check_not_null(k, "k");
  check_not_null(v, "v");
  if (out != nullptr) check_not_null(*out, "out");
  check_layout(options.layout);
  check_dtypes(q, k, v, out);

  const DimOrder order = order_of(options.layout);
  check_sizes_and_strides(q, "q", order);
  check_sizes_and_strides(k, "k", order);
  check_sizes_and_strides(v, "v", order);
  if (out != nullptr) check_sizes_and_strides(*out, "out", order);

  AttentionProblem result;
  AttentionCall& call = result.call;
  call.batch = q.shape[order.batch];
  call.heads_q = q.shape[order.heads];
  call.seq_q = q.shape[order.tokens];
  call.head_dim = q.shape[order.channels];
  call.heads_kv = k.shape[order.heads];
  call.seq_kv = k.shape[order.tokens];
  call.dtype = q.dtype;
  check_head_dim(call.head_dim);

  const auto agree = [&](const TensorView& tensor, const char* name, int dim, std::int64_t expected,
                         const char* what) {
    if (tensor.shape[dim] != expected)
      fail(ErrorCode::invalid_argument, "{}.shape[{}] ({}) is {} but {} is {}", name, dim, order.names[dim],
           tensor.shape[dim], what, expected);
  };
  agree(k, "k", order.batch, call.batch, "the batch of q");
  agree(v, "v", order.batch, call.batch, "the batch of q");
  agree(k, "k", order.channels, call.head_dim, "the head_dim of q");
  agree(v, "v", order.channels, call.head_dim, "the head_dim of q");
  agree(v, "v", order.heads, call.heads_kv, "the heads of k");
  agree(v, "v", order.tokens, call.seq_kv, "the sequence length of k");
  if (out != nullptr)
    for (int i = 0; i < 4; ++i)
      if (out->shape[i] != q.shape[i])
        fail(ErrorCode::invalid_argument, "out.shape [{}] differs from q.shape [{}]; out must have q's shape",
             fmt::join(out->shape, ", "), fmt::join(q.shape, ", "));
  if (out != nullptr) check_no_overlap(*out, "out");

  if (options.sm_scale && !(std::isfinite(*options.sm_scale) && *options.sm_scale > 0.0f))
    fail(ErrorCode::invalid_argument, "options.sm_scale {} is not finite and > 0", *options.sm_scale);
  call.sm_scale = options.sm_scale ? *options.sm_scale : 1.0f / std::sqrt(static_cast<float>(call.head_dim));

  if (options.device < -1)
    fail(ErrorCode::invalid_argument, "options.device {} is invalid; pass an ordinal >= 0 or -1 (the device of q)",
         options.device);
  result.device = options.device >= 0 ? options.device : q.device;
  const auto on_device = [&](const TensorView& tensor, const char* name) {
    if (tensor.device < 0)
      fail(ErrorCode::invalid_argument, "{}.device {} is not a device ordinal (>= 0)", name, tensor.device);
    if (tensor.device != result.device)
      fail(ErrorCode::invalid_argument,
           "{}.device is {} but the call runs on device {} ({}); all tensors must be on one device", name,
           tensor.device, result.device, options.device >= 0 ? "options.device" : "the device of q");
  };
  on_device(q, "q");
  on_device(k, "k");
  on_device(v, "v");
  if (out != nullptr) on_device(*out, "out");

  call.q = q.data;
  call.k = k.data;
  call.v = v.data;
  call.out = out != nullptr ? out->data : nullptr;
  call.q_strides = row_strides(q, order);
  call.k_strides = row_strides(k, order);
  call.v_strides = row_strides(v, order);
  if (out != nullptr) call.out_strides = row_strides(*out, order);
  call.causal = options.causal;
  call.smooth_k = options.smooth_k;
  call.lse = options.lse;
  if (varlen_requested(options.varlen))
    apply_varlen(options.varlen, options, q, k, call);
  else
    call.key_mask = key_mask_view(options.key_mask, call.batch, call.heads_q, call.heads_kv, call.seq_kv, result.device);

  check_attention_call(call);  // the plan's rules: dtype, head dim, GQA, index limits
  return result;
}

}  // namespace

AttentionProblem validate_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                    const TensorView& out, const AttentionOptions& options) {
  return validate(q, k, v, &out, options);
}

AttentionProblem validate_attention_inputs(const TensorView& q, const TensorView& k, const TensorView& v,
                                           const AttentionOptions& options) {
  return validate(q, k, v, nullptr, options);
}

}  // namespace sagejit
