// On a GPU, the public API end to end (issue 24): after a first call of a signature, a repeated
// attention() (the runtime's workspace or a caller's) and sagejit_attention_launch (the C ABI, a
// reused launch struct) allocate nothing on the host, at other addresses, with and without an LSE,
// and compute the same output as the first call. Skips without a GPU.
#include <doctest/doctest.h>

#include <vector>

#include "allocation_counter.hpp"
#include "gpu_attention_support.hpp"
#include "random_support.hpp"
#include "sagejit/sagejit.h"
#include "sagejit/sagejit.hpp"

using namespace sagejit;
using namespace sagejit::test;

namespace {

struct Buffers {
  Buffers(const Gpu& gpu, std::int64_t batch, std::int64_t heads, std::int64_t seq, std::int64_t head_dim)
      : shape{batch, heads, seq, head_dim},
        elements(static_cast<std::size_t>(batch * heads * seq * head_dim)),
        q(device_buffer(gpu, elements * 2)), k(device_buffer(gpu, elements * 2)), v(device_buffer(gpu, elements * 2)),
        out(device_buffer(gpu, elements * 2)), lse(device_buffer(gpu, static_cast<std::size_t>(batch * heads * seq) * 4)) {
    std::vector<std::uint16_t> host(elements);
    auto& rng = logged_rng();
    for (DeviceBuffer* buffer : {&q, &k, &v}) {
      // bf16 values in [-2, 2): sign, exponent 126..127, random mantissa.
      for (auto& value : host)
        value = static_cast<std::uint16_t>((rng() & 0x8000u) | ((126u + (rng() & 1u)) << 7) | (rng() & 0x7fu));
      buffer->upload(host);
    }
  }
  TensorView view(const DeviceBuffer& buffer) const {
    return TensorView{buffer.get(), DType::bf16, shape, contiguous_strides(shape), 0};
  }
  sagejit_tensor c_view(const DeviceBuffer& buffer) const {
    sagejit_tensor tensor{};
    const TensorView v = view(buffer);
    tensor.data = v.data;
    tensor.dtype = SAGEJIT_DTYPE_BF16;
    tensor.device = 0;
    for (int i = 0; i < 4; ++i) tensor.shape[i] = v.shape[i], tensor.strides[i] = v.strides[i];
    return tensor;
  }
  std::vector<std::uint16_t> output() const { return out.download_as<std::uint16_t>(elements); }

  std::array<std::int64_t, 4> shape;
  std::size_t elements;
  DeviceBuffer q, k, v, out, lse;
};

}  // namespace

TEST_CASE("a repeated attention() and sagejit_attention_launch allocate nothing on the host") {
  const auto gpu = gpu_or_skip();
  if (!gpu) return;
  for (const bool with_lse : {false, true}) {
    CAPTURE(with_lse);
    const std::int64_t heads = random_in(1, 4), seq = random_in(64, 1024);
    CAPTURE(heads);
    CAPTURE(seq);
    // Two sets of tensors of one signature: the repeated calls run at other addresses.
    Buffers first(*gpu, 1, heads, seq, 128), second(*gpu, 1, heads, seq, 128);
    AttentionOptions options;
    const auto run = [&](const Buffers& b) {
      options.lse = with_lse ? static_cast<float*>(b.lse.get()) : nullptr;
      attention(b.view(b.q), b.view(b.k), b.view(b.v), b.view(b.out), options, nullptr);
    };
    run(first);  // the first call: plans, loads (compiling or from the cache), grows the workspace
    gpu->device->synchronize(0, nullptr);
    const std::size_t workspace_bytes = workspace_size(first.view(first.q), first.view(first.k), first.view(first.v), options);
    DeviceBuffer workspace = device_buffer(*gpu, workspace_bytes);
    attention(first.view(first.q), first.view(first.k), first.view(first.v), first.view(first.out), options, nullptr,
              Workspace{workspace.get(), workspace_bytes});
    gpu->device->synchronize(0, nullptr);
    const std::vector<std::uint16_t> expected = first.output();

    {
      AllocationCount allocations;
      run(second);
      CHECK(allocations.stop() == 0);
    }
    {
      AllocationCount allocations;
      options.lse = with_lse ? static_cast<float*>(second.lse.get()) : nullptr;
      attention(second.view(second.q), second.view(second.k), second.view(second.v), second.view(second.out), options,
                nullptr, Workspace{workspace.get(), workspace_bytes});
      CHECK(allocations.stop() == 0);
    }
    // The C ABI with a launch struct built once: the runtime's workspace, then the caller's.
    const sagejit_tensor cq = second.c_view(second.q), ck = second.c_view(second.k), cv = second.c_view(second.v),
                         cout = second.c_view(second.out);
    sagejit_options c_options = sagejit_default_options();
    c_options.lse = with_lse ? static_cast<float*>(second.lse.get()) : nullptr;
    sagejit_launch launch = sagejit_default_launch();
    REQUIRE(sagejit_attention_launch(&cq, &ck, &cv, &cout, &c_options, &launch) == SAGEJIT_SUCCESS);
    {
      AllocationCount allocations;
      const sagejit_status status = sagejit_attention_launch(&cq, &ck, &cv, &cout, &c_options, &launch);
      launch.workspace = workspace.get();
      launch.workspace_bytes = workspace_bytes;
      const sagejit_status with_workspace = sagejit_attention_launch(&cq, &ck, &cv, &cout, &c_options, &launch);
      CHECK(allocations.stop() == 0);
      CHECK(status == SAGEJIT_SUCCESS);
      CHECK_MESSAGE(with_workspace == SAGEJIT_SUCCESS, sagejit_last_error());
    }
    gpu->device->synchronize(0, nullptr);
    // The repeated calls wrote their own output; the first tensors, called again into a poisoned
    // output, give the first call's output bit for bit.
    CHECK(second.output() != first.output());
    first.out.upload(std::vector<std::uint16_t>(first.elements, 0xffff));
    run(first);
    gpu->device->synchronize(0, nullptr);
    CHECK(first.output() == expected);  // a repeated call of the signature computes what the first did
  }
}
