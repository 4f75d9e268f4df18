// The C ABI (sagejit/sagejit.h) over the C++ API: converts the plain structs, maps every exception to
// a status and keeps the message in a thread-local buffer. Nothing thrown crosses this boundary.
#include <exception>
#include <new>
#include <string>

#include "api/sized_struct.hpp"
#include "core/error.hpp"
#include "platform/runtime_discovery.hpp"
#include "sagejit/sagejit.h"
#include "sagejit/sagejit.hpp"

namespace sagejit {
namespace {

thread_local std::string last_error_message;

static_assert(static_cast<int>(ErrorCode::invalid_argument) == SAGEJIT_ERROR_INVALID_ARGUMENT);
static_assert(static_cast<int>(ErrorCode::unsupported) == SAGEJIT_ERROR_UNSUPPORTED);
static_assert(static_cast<int>(ErrorCode::runtime_not_found) == SAGEJIT_ERROR_RUNTIME_NOT_FOUND);
static_assert(static_cast<int>(ErrorCode::device_error) == SAGEJIT_ERROR_DEVICE);
static_assert(static_cast<int>(ErrorCode::compile_error) == SAGEJIT_ERROR_COMPILE);
static_assert(static_cast<int>(ErrorCode::cache_error) == SAGEJIT_ERROR_CACHE);
static_assert(static_cast<int>(ErrorCode::config_error) == SAGEJIT_ERROR_CONFIG);
static_assert(static_cast<int>(ErrorCode::internal) == SAGEJIT_ERROR_INTERNAL);
static_assert(static_cast<int>(DType::bf16) == SAGEJIT_DTYPE_BF16 && static_cast<int>(DType::fp16) == SAGEJIT_DTYPE_FP16 &&
              static_cast<int>(DType::fp8_e4m3) == SAGEJIT_DTYPE_FP8_E4M3);
static_assert(static_cast<int>(MaskType::none) == SAGEJIT_MASK_NONE && static_cast<int>(MaskType::boolean) == SAGEJIT_MASK_BOOL &&
              static_cast<int>(MaskType::fp32) == SAGEJIT_MASK_FP32 && static_cast<int>(MaskType::bf16) == SAGEJIT_MASK_BF16 &&
              static_cast<int>(MaskType::fp16) == SAGEJIT_MASK_FP16);
static_assert(static_cast<int>(Layout::HND) == SAGEJIT_LAYOUT_HND && static_cast<int>(Layout::NHD) == SAGEJIT_LAYOUT_NHD);

// Runs `body`, turning any exception into a status and the thread's last error.
template <typename Body>
sagejit_status guarded(Body&& body) noexcept {
  try {
    body();
    last_error_message.clear();
    return SAGEJIT_SUCCESS;
  } catch (const Error& error) {
    last_error_message = error.what();
    return static_cast<sagejit_status>(error.code());
  } catch (const std::bad_alloc&) {
    last_error_message = "out of host memory";
    return SAGEJIT_ERROR_INTERNAL;
  } catch (const std::exception& error) {
    last_error_message = std::string("internal error: ") + error.what();
    return SAGEJIT_ERROR_INTERNAL;
  } catch (...) {
    last_error_message = "internal error: unknown exception";
    return SAGEJIT_ERROR_INTERNAL;
  }
}

TensorView to_view(const sagejit_tensor* tensor, const char* name) {
  if (tensor == nullptr) fail(ErrorCode::invalid_argument, "{} is NULL; pass a sagejit_tensor", name);
  TensorView view;
  view.data = tensor->data;
  view.dtype = static_cast<DType>(tensor->dtype);
  view.device = tensor->device;
  for (int i = 0; i < 4; ++i) {
    view.shape[i] = tensor->shape[i];
    view.strides[i] = tensor->strides[i];
  }
  return view;
}

AttentionOptions to_options(const sagejit_options* options) {
  const sagejit_options c =
      options != nullptr
          ? read_sized_struct(*options, SAGEJIT_OPTIONS_V1_SIZE, sagejit_default_options(), "options", "sagejit_default_options()")
          : sagejit_default_options();
  AttentionOptions result;
  result.layout = static_cast<Layout>(c.layout);
  if (c.causal != 0 && c.causal != 1) fail(ErrorCode::invalid_argument, "options->causal {} is not 0 or 1", c.causal);
  if (c.smooth_k != 0 && c.smooth_k != 1)
    fail(ErrorCode::invalid_argument, "options->smooth_k {} is not 0 or 1", c.smooth_k);
  result.causal = c.causal != 0;
  if (c.has_sm_scale != 0) result.sm_scale = c.sm_scale;
  result.smooth_k = c.smooth_k != 0;
  result.device = c.device;
  result.lse = c.lse;
  const sagejit_key_mask& mask = c.key_mask;  // a V1 struct has none: the default's type NONE
  result.key_mask.data = mask.data;
  result.key_mask.type = static_cast<MaskType>(mask.type);
  result.key_mask.device = mask.device;
  for (int i = 0; i < 2; ++i) {
    result.key_mask.shape[i] = mask.shape[i];
    result.key_mask.strides[i] = mask.strides[i];
  }
  result.key_mask.heads = c.key_mask_heads.count;  // a V1-V3 struct has none: the default's count 1
  result.key_mask.head_stride = c.key_mask_heads.stride;
  const sagejit_varlen& varlen = c.varlen;  // a V1/V2 struct has none: the default's zeros
  result.varlen = {varlen.cu_seqlens_q, varlen.cu_seqlens_k, varlen.batch, varlen.max_seqlen_q, varlen.max_seqlen_k};
  return result;
}

sagejit_launch to_launch(const sagejit_launch* launch) {
  const sagejit_launch result =
      launch != nullptr ? read_sized_struct(*launch, SAGEJIT_LAUNCH_V1_SIZE, sagejit_default_launch(), "launch",
                                            "sagejit_default_launch()")
                        : sagejit_default_launch();
  if (result.workspace == nullptr && result.workspace_bytes != 0)
    fail(ErrorCode::invalid_argument,
         "launch->workspace_bytes is {} but launch->workspace is NULL; pass a device buffer of that many bytes, or "
         "0 bytes for the runtime's own workspace",
         result.workspace_bytes);
  return result;
}

// The converted arguments of one call, in a fixed order (q, k, v, out, options) so that the first bad
// argument is the one reported.
struct CallArguments {
  CallArguments(const sagejit_tensor* q_in, const sagejit_tensor* k_in, const sagejit_tensor* v_in,
                const sagejit_tensor* out_in, const sagejit_options* options_in)
      : q(to_view(q_in, "q")),
        k(to_view(k_in, "k")),
        v(to_view(v_in, "v")),
        out(to_view(out_in, "out")),
        options(to_options(options_in)) {}
  TensorView q, k, v, out;
  AttentionOptions options;
};

}  // namespace
}  // namespace sagejit

using namespace sagejit;

extern "C" {

sagejit_options sagejit_default_options(void) {
  sagejit_options options{};
  options.struct_size = sizeof(sagejit_options);
  options.layout = SAGEJIT_LAYOUT_HND;
  options.causal = 0;
  options.has_sm_scale = 0;
  options.sm_scale = 0.0f;
  options.smooth_k = 1;
  options.device = -1;
  options.lse = nullptr;
  options.key_mask.data = nullptr;
  options.key_mask.type = SAGEJIT_MASK_NONE;
  options.varlen = sagejit_varlen{nullptr, nullptr, 0, 0, 0};
  options.key_mask_heads = sagejit_key_mask_heads{1, 0};
  return options;
}

sagejit_status sagejit_attention(const sagejit_tensor* q, const sagejit_tensor* k, const sagejit_tensor* v,
                                 const sagejit_tensor* out, const sagejit_options* options, void* stream) {
  return guarded([&] {
    const CallArguments call(q, k, v, out, options);
    attention(call.q, call.k, call.v, call.out, call.options, stream);
  });
}

sagejit_launch sagejit_default_launch(void) {
  sagejit_launch launch{};
  launch.struct_size = sizeof(sagejit_launch);
  launch.stream = nullptr;
  launch.workspace = nullptr;
  launch.workspace_bytes = 0;
  return launch;
}

sagejit_status sagejit_attention_launch(const sagejit_tensor* q, const sagejit_tensor* k, const sagejit_tensor* v,
                                        const sagejit_tensor* out, const sagejit_options* options,
                                        const sagejit_launch* launch) {
  return guarded([&] {
    const CallArguments call(q, k, v, out, options);
    const sagejit_launch where = to_launch(launch);
    if (where.workspace == nullptr)
      attention(call.q, call.k, call.v, call.out, call.options, where.stream);
    else
      attention(call.q, call.k, call.v, call.out, call.options, where.stream,
                Workspace{where.workspace, where.workspace_bytes});
  });
}

sagejit_status sagejit_attention_with_workspace(const sagejit_tensor* q, const sagejit_tensor* k,
                                                const sagejit_tensor* v, const sagejit_tensor* out,
                                                const sagejit_options* options, void* stream, void* workspace,
                                                size_t workspace_bytes) {
  return guarded([&] {
    const CallArguments call(q, k, v, out, options);
    attention(call.q, call.k, call.v, call.out, call.options, stream, Workspace{workspace, workspace_bytes});
  });
}

sagejit_status sagejit_emulate_attention(const sagejit_tensor* q, const sagejit_tensor* k, const sagejit_tensor* v,
                                         const sagejit_tensor* out, const sagejit_options* options, const char* target) {
  return guarded([&] {
    const CallArguments call(q, k, v, out, options);
    emulate_attention(call.q, call.k, call.v, call.out, call.options,
                      target != nullptr ? std::string_view(target) : default_emulated_target);
  });
}

sagejit_status sagejit_supports_target(const sagejit_tensor* q, const sagejit_tensor* k, const sagejit_tensor* v,
                                       const sagejit_tensor* out, const sagejit_options* options, const char* target,
                                       int* supported) {
  if (supported == nullptr) {
    last_error_message = "sagejit_supports_target: supported is NULL; pass a pointer to an int";
    return SAGEJIT_ERROR_INVALID_ARGUMENT;
  }
  *supported = 0;
  const sagejit_status status = guarded([&] {
    const CallArguments call(q, k, v, out, options);
    const Support support = supports_target(call.q, call.k, call.v, call.out, call.options,
                                            target != nullptr ? std::string_view(target) : default_emulated_target);
    if (!support.ok) fail(ErrorCode::unsupported, "{}", support.reason);
  });
  if (status == SAGEJIT_SUCCESS) {
    *supported = 1;
    return SAGEJIT_SUCCESS;
  }
  // As sagejit_supports: the reason stays in sagejit_last_error().
  return status == SAGEJIT_ERROR_INTERNAL ? status : SAGEJIT_SUCCESS;
}

sagejit_status sagejit_supports(const sagejit_tensor* q, const sagejit_tensor* k, const sagejit_tensor* v,
                                const sagejit_tensor* out, const sagejit_options* options, int* supported) {
  if (supported == nullptr) {
    last_error_message = "sagejit_supports: supported is NULL; pass a pointer to an int";
    return SAGEJIT_ERROR_INVALID_ARGUMENT;
  }
  *supported = 0;
  const sagejit_status status = guarded([&] {
    const CallArguments call(q, k, v, out, options);
    const Support support = sagejit::supports(call.q, call.k, call.v, call.out, call.options);
    if (!support.ok) fail(ErrorCode::unsupported, "{}", support.reason);
  });
  if (status == SAGEJIT_SUCCESS) {
    *supported = 1;
    return SAGEJIT_SUCCESS;
  }
  // The reason stays in sagejit_last_error(); the query itself succeeded unless it ran out of memory.
  return status == SAGEJIT_ERROR_INTERNAL ? status : SAGEJIT_SUCCESS;
}

sagejit_status sagejit_workspace_size(const sagejit_tensor* q, const sagejit_tensor* k, const sagejit_tensor* v,
                                      const sagejit_options* options, size_t* bytes) {
  return guarded([&] {
    if (bytes == nullptr) fail(ErrorCode::invalid_argument, "sagejit_workspace_size: bytes is NULL; pass a size_t*");
    const TensorView q_view = to_view(q, "q"), k_view = to_view(k, "k"), v_view = to_view(v, "v");
    *bytes = workspace_size(q_view, k_view, v_view, to_options(options));
  });
}

sagejit_status sagejit_release_workspaces(void) {
  return guarded([] { release_workspaces(); });
}

sagejit_status sagejit_set_library_search_dirs(const char* directories) {
  return guarded([&] {
    if (directories == nullptr)
      fail(ErrorCode::invalid_argument, "sagejit_set_library_search_dirs: directories is NULL; pass a ':'-separated "
                                        "list (\"\" for none)");
    set_library_search_dirs(split_search_path(directories));
  });
}

const char* sagejit_last_error(void) { return last_error_message.c_str(); }

const char* sagejit_status_string(sagejit_status status) {
  if (status == SAGEJIT_SUCCESS) return "success";
  if (status < SAGEJIT_ERROR_INVALID_ARGUMENT || status > SAGEJIT_ERROR_INTERNAL) return "unknown status";
  return to_string(static_cast<ErrorCode>(status));
}

const char* sagejit_version(void) { return version().data(); }

sagejit_status sagejit_check_head_dim(int64_t head_dim) {
  return guarded([&] {
    const Support support = supports_head_dim(head_dim);
    if (!support.ok) fail(ErrorCode::unsupported, "{}", support.reason);
  });
}

}  // extern "C"
