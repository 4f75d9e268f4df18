// A small host application: allocates q, k, v and out on the GPU, calls sagejit::attention twice and
// prints the first call's time (compile, or load from the code-object cache) and the steady-state
// time, plus the workspace (the only extra device memory a call needs) for the anchor
// shapes of docs/ANCHORS.md.
//
//   host_app                        # 1,24,4608,128 bf16, HND
//   host_app --shape 4,32,4096,128 --causal --layout NHD --iterations 20
//
// It is written as any consumer of an installed sagejit would write it: only the public headers
// <sagejit/...>, C++17, linked with sagejit::sagejit (find_package(sagejit CONFIG)) or with
// `pkg-config --cflags --libs sagejit`. sagejit takes device pointers and a stream and never
// allocates the caller's tensors, so the example brings its own device memory and event timing: it
// loads the GPU runtime itself (the CUDA driver, libcuda.so.1, or HIP, libamdhip64.so) with dlopen,
// so it builds without CUDA or ROCm headers. Without a GPU it says "skipped" and exits 0.
#include <dlfcn.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <sagejit/sagejit.hpp>

namespace {

// The few device calls the example needs, on device 0 (null stream: the default stream, which
// sagejit::attention(..., nullptr) also uses). Every failure throws std::runtime_error.
class GpuRuntime {
 public:
  virtual ~GpuRuntime() = default;
  virtual std::string name() const = 0;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void upload(void* device, const void* host, std::size_t bytes) = 0;
  virtual void free(void* device) = 0;
  virtual void* create_event() = 0;
  virtual void record_event(void* event) = 0;
  virtual float elapsed_ms(void* start, void* stop) = 0;  // after both events completed
  virtual void destroy_event(void* event) = 0;
  virtual void synchronize() = 0;
};

// dlsym with the result cast to the function type of `pointer`; nullptr when absent.
template <typename F>
bool resolve(void* library, const char* symbol, F& pointer) {
  pointer = reinterpret_cast<F>(dlsym(library, symbol));
  return pointer != nullptr;
}

void check(int status, const char* call) {
  if (status != 0) throw std::runtime_error(std::string(call) + " failed with status " + std::to_string(status));
}

// The CUDA driver API on the primary context of device 0 (the context sagejit uses too).
class CudaDriver final : public GpuRuntime {
 public:
  // nullptr with `why` set when there is no usable NVIDIA GPU.
  static std::unique_ptr<GpuRuntime> open(std::string& why) {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      why = "no CUDA driver (libcuda.so.1)";
      return nullptr;
    }
    std::unique_ptr<CudaDriver> cuda(new CudaDriver);
    auto& f = *cuda;
    if (!resolve(library, "cuInit", f.init_) || !resolve(library, "cuDeviceGetCount", f.device_count_) ||
        !resolve(library, "cuDeviceGet", f.device_get_) || !resolve(library, "cuDeviceGetName", f.device_name_) ||
        !resolve(library, "cuDevicePrimaryCtxRetain", f.retain_) || !resolve(library, "cuCtxSetCurrent", f.set_current_) ||
        !resolve(library, "cuCtxSynchronize", f.synchronize_) || !resolve(library, "cuMemAlloc_v2", f.alloc_) ||
        !resolve(library, "cuMemFree_v2", f.free_) || !resolve(library, "cuMemcpyHtoD_v2", f.copy_) ||
        !resolve(library, "cuEventCreate", f.event_create_) || !resolve(library, "cuEventRecord", f.event_record_) ||
        !resolve(library, "cuEventElapsedTime", f.event_elapsed_) ||
        !resolve(library, "cuEventDestroy_v2", f.event_destroy_)) {
      why = "libcuda.so.1 lacks a driver API function";
      return nullptr;
    }
    int count = 0;
    if (f.init_(0) != 0 || f.device_count_(&count) != 0 || count < 1) {
      why = "no CUDA device";
      return nullptr;
    }
    void* context = nullptr;
    check(f.device_get_(&f.device_, 0), "cuDeviceGet");
    check(f.retain_(&context, f.device_), "cuDevicePrimaryCtxRetain");
    check(f.set_current_(context), "cuCtxSetCurrent");
    return cuda;
  }

  std::string name() const override {
    char name[256] = {};
    check(device_name_(name, sizeof name, device_), "cuDeviceGetName");
    return name;
  }
  void* allocate(std::size_t bytes) override {
    unsigned long long pointer = 0;
    check(alloc_(&pointer, bytes), "cuMemAlloc");
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(pointer));
  }
  void upload(void* device, const void* host, std::size_t bytes) override {
    check(copy_(address(device), host, bytes), "cuMemcpyHtoD");
  }
  void free(void* device) override { check(free_(address(device)), "cuMemFree"); }
  void* create_event() override {
    void* event = nullptr;
    check(event_create_(&event, 0), "cuEventCreate");
    return event;
  }
  void record_event(void* event) override { check(event_record_(event, nullptr), "cuEventRecord"); }
  float elapsed_ms(void* start, void* stop) override {
    float ms = 0;
    check(event_elapsed_(&ms, start, stop), "cuEventElapsedTime");
    return ms;
  }
  void destroy_event(void* event) override { check(event_destroy_(event), "cuEventDestroy"); }
  void synchronize() override { check(synchronize_(), "cuCtxSynchronize"); }

 private:
  static unsigned long long address(void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer); }

  int device_ = 0;
  int (*init_)(unsigned) = nullptr;
  int (*device_count_)(int*) = nullptr;
  int (*device_get_)(int*, int) = nullptr;
  int (*device_name_)(char*, int, int) = nullptr;
  int (*retain_)(void**, int) = nullptr;
  int (*set_current_)(void*) = nullptr;
  int (*synchronize_)() = nullptr;
  int (*alloc_)(unsigned long long*, std::size_t) = nullptr;
  int (*free_)(unsigned long long) = nullptr;
  int (*copy_)(unsigned long long, const void*, std::size_t) = nullptr;
  int (*event_create_)(void**, unsigned) = nullptr;
  int (*event_record_)(void*, void*) = nullptr;
  int (*event_elapsed_)(float*, void*, void*) = nullptr;
  int (*event_destroy_)(void*) = nullptr;
};

// The HIP runtime on device 0.
class HipRuntime final : public GpuRuntime {
 public:
  static std::unique_ptr<GpuRuntime> open(std::string& why) {
    void* library = nullptr;
    for (const char* name : {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"})
      if ((library = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    if (library == nullptr) {
      why = "no HIP runtime (libamdhip64.so)";
      return nullptr;
    }
    std::unique_ptr<HipRuntime> hip(new HipRuntime);
    auto& f = *hip;
    if (!resolve(library, "hipGetDeviceCount", f.device_count_) || !resolve(library, "hipSetDevice", f.set_device_) ||
        !resolve(library, "hipDeviceGetName", f.device_name_) ||
        !resolve(library, "hipDeviceSynchronize", f.synchronize_) || !resolve(library, "hipMalloc", f.alloc_) ||
        !resolve(library, "hipFree", f.free_) || !resolve(library, "hipMemcpy", f.copy_) ||
        !resolve(library, "hipEventCreate", f.event_create_) || !resolve(library, "hipEventRecord", f.event_record_) ||
        !resolve(library, "hipEventElapsedTime", f.event_elapsed_) ||
        !resolve(library, "hipEventDestroy", f.event_destroy_)) {
      why = "libamdhip64.so lacks a runtime API function";
      return nullptr;
    }
    int count = 0;
    if (f.device_count_(&count) != 0 || count < 1) {
      why = "no HIP device";
      return nullptr;
    }
    check(f.set_device_(0), "hipSetDevice");
    return hip;
  }

  std::string name() const override {
    char name[256] = {};
    check(device_name_(name, sizeof name, 0), "hipDeviceGetName");
    return name;
  }
  void* allocate(std::size_t bytes) override {
    void* pointer = nullptr;
    check(alloc_(&pointer, bytes), "hipMalloc");
    return pointer;
  }
  void upload(void* device, const void* host, std::size_t bytes) override {
    check(copy_(device, host, bytes, host_to_device), "hipMemcpy");
  }
  void free(void* device) override { check(free_(device), "hipFree"); }
  void* create_event() override {
    void* event = nullptr;
    check(event_create_(&event), "hipEventCreate");
    return event;
  }
  void record_event(void* event) override { check(event_record_(event, nullptr), "hipEventRecord"); }
  float elapsed_ms(void* start, void* stop) override {
    float ms = 0;
    check(event_elapsed_(&ms, start, stop), "hipEventElapsedTime");
    return ms;
  }
  void destroy_event(void* event) override { check(event_destroy_(event), "hipEventDestroy"); }
  void synchronize() override { check(synchronize_(), "hipDeviceSynchronize"); }

 private:
  static constexpr int host_to_device = 1;  // hipMemcpyHostToDevice
  int (*device_count_)(int*) = nullptr;
  int (*set_device_)(int) = nullptr;
  int (*device_name_)(char*, int, int) = nullptr;
  int (*synchronize_)() = nullptr;
  int (*alloc_)(void**, std::size_t) = nullptr;
  int (*free_)(void*) = nullptr;
  int (*copy_)(void*, const void*, std::size_t, int) = nullptr;
  int (*event_create_)(void**) = nullptr;
  int (*event_record_)(void*, void*) = nullptr;
  int (*event_elapsed_)(float*, void*, void*) = nullptr;
  int (*event_destroy_)(void*) = nullptr;
};

// The first GPU runtime with a device (CUDA, then HIP), or nullptr with the reasons in `why`.
std::unique_ptr<GpuRuntime> open_gpu(std::string& why) {
  std::string cuda_why, hip_why;
  if (auto gpu = CudaDriver::open(cuda_why)) return gpu;
  if (auto gpu = HipRuntime::open(hip_why)) return gpu;
  why = cuda_why + "; " + hip_why;
  return nullptr;
}

struct Shape {
  std::int64_t batch, heads, tokens, head_dim;
  bool causal;
};

std::array<std::int64_t, 4> dims(const Shape& s, sagejit::Layout layout) {
  return layout == sagejit::Layout::HND ? std::array<std::int64_t, 4>{s.batch, s.heads, s.tokens, s.head_dim}
                                        : std::array<std::int64_t, 4>{s.batch, s.tokens, s.heads, s.head_dim};
}

// bf16 bits of random normal values (truncation is fine for inputs).
std::vector<std::uint16_t> random_bf16(std::size_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<std::uint16_t> values(count);
  for (auto& value : values) {
    const float x = normal(rng);
    std::uint32_t bits;
    std::memcpy(&bits, &x, 4);
    value = static_cast<std::uint16_t>(bits >> 16);
  }
  return values;
}

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

struct Arguments {
  std::vector<std::int64_t> shape{1, 24, 4608, 128};
  bool causal = false;
  std::string layout = "HND";
  int iterations = 10;
};

const char* const usage =
    "usage: host_app [--shape B,H,N,D] [--causal] [--layout HND|NHD] [--iterations N]\n"
    "sagejit host example: two attention calls, first-call and steady-state times\n";

// Parses the command line; false (after printing why) on a bad one.
bool parse(int argc, char** argv, Arguments& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--causal") {
      args.causal = true;
    } else if (flag == "--shape" && has_value) {
      args.shape.clear();
      std::istringstream items(argv[++i]);
      for (std::string item; std::getline(items, item, ',');) args.shape.push_back(std::atoll(item.c_str()));
      if (args.shape.size() != 4 || args.shape[0] < 1 || args.shape[1] < 1 || args.shape[2] < 1 || args.shape[3] < 1) {
        std::fprintf(stderr, "--shape: expected four positive numbers B,H,N,D\n%s", usage);
        return false;
      }
    } else if (flag == "--layout" && has_value && (std::string(argv[i + 1]) == "HND" || std::string(argv[i + 1]) == "NHD")) {
      args.layout = argv[++i];
    } else if (flag == "--iterations" && has_value && std::atoi(argv[i + 1]) > 0) {
      args.iterations = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "%s: unknown option or bad value\n%s", flag.c_str(), usage);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Arguments args;
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf("%s", usage);
    return 0;
  }
  if (!parse(argc, argv, args)) return 2;

  std::string why;
  const std::unique_ptr<GpuRuntime> gpu = open_gpu(why);
  if (!gpu) {
    std::printf("host_app (sagejit %s, headers %s): skipped: %s\n", std::string(sagejit::version()).c_str(),
                SAGEJIT_VERSION_STRING, why.c_str());
    return 0;
  }
  try {
    std::printf("sagejit %s on %s\n", std::string(sagejit::version()).c_str(), gpu->name().c_str());
    const sagejit::Layout layout = args.layout == "HND" ? sagejit::Layout::HND : sagejit::Layout::NHD;
    const Shape shape{args.shape[0], args.shape[1], args.shape[2], args.shape[3], args.causal};

    // q, k, v, out: dense bf16 tensors in the chosen layout.
    const auto shape4 = dims(shape, layout);
    const std::size_t count = static_cast<std::size_t>(shape.batch * shape.heads * shape.tokens * shape.head_dim);
    std::mt19937 rng(std::random_device{}());
    std::vector<void*> buffers;
    for (int i = 0; i < 4; ++i) {
      buffers.push_back(gpu->allocate(count * 2));
      if (i < 3) gpu->upload(buffers.back(), random_bf16(count, rng).data(), count * 2);
    }
    const auto view = [&](int i) {
      return sagejit::TensorView{buffers[i], sagejit::DType::bf16, shape4, sagejit::contiguous_strides(shape4), 0};
    };
    sagejit::AttentionOptions options;
    options.layout = layout;
    options.causal = args.causal;

    const sagejit::Support support = sagejit::supports(view(0), view(1), view(2), view(3), options);
    if (!support) {
      std::printf("not supported: %s\n", support.reason.c_str());
      return 1;
    }

    void* start = gpu->create_event();
    void* stop = gpu->create_event();
    const auto wall = std::chrono::steady_clock::now();
    sagejit::attention(view(0), view(1), view(2), view(3), options, nullptr);
    gpu->synchronize();
    const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall).count();

    sagejit::attention(view(0), view(1), view(2), view(3), options, nullptr);  // warm
    gpu->record_event(start);
    for (int i = 0; i < args.iterations; ++i)
      sagejit::attention(view(0), view(1), view(2), view(3), options, nullptr);
    gpu->record_event(stop);
    gpu->synchronize();
    const double steady_ms = gpu->elapsed_ms(start, stop) / args.iterations;
    const double flops = 4.0 * static_cast<double>(shape.batch * shape.heads) * static_cast<double>(shape.tokens) *
                         static_cast<double>(shape.tokens) * static_cast<double>(shape.head_dim) *
                         (args.causal ? 0.5 : 1.0);
    std::printf("shape B=%lld H=%lld N=%lld D=%lld %s%s\n", static_cast<long long>(shape.batch),
                static_cast<long long>(shape.heads), static_cast<long long>(shape.tokens),
                static_cast<long long>(shape.head_dim), args.layout.c_str(), args.causal ? " causal" : "");
    std::printf("first call (compile or cache load + run): %.1f ms\n", first_ms);
    std::printf("steady state: %.3f ms per call (%.0f TOPS, mean of %d)\n", steady_ms, flops / steady_ms * 1e-9,
                args.iterations);

    // Extra device memory per call = the workspace (inputs and output are the caller's).
    std::printf("workspace (peak extra device memory per call), anchor shapes (docs/ANCHORS.md):\n");
    const std::vector<Shape> design_shapes{{1, 24, 4608, 128, false}, {1, 28, 16384, 128, false},
                                           {1, 40, 32760, 128, false}, {1, 16, 8192, 64, false},
                                           {4, 32, 4096, 128, true}};
    for (const Shape& s : design_shapes) {
      const auto d = dims(s, sagejit::Layout::HND);
      const sagejit::TensorView t{buffers[0], sagejit::DType::bf16, d, sagejit::contiguous_strides(d), 0};
      sagejit::AttentionOptions o;
      o.causal = s.causal;
      const std::size_t bytes = sagejit::workspace_size(t, t, t, o);
      const std::size_t inputs = 3 * static_cast<std::size_t>(s.batch * s.heads * s.tokens * s.head_dim) * 2;
      std::printf("  %lld,%lld,%lld,%lld%s: %.1f MiB (%.2f x the bytes of q+k+v)\n", static_cast<long long>(s.batch),
                  static_cast<long long>(s.heads), static_cast<long long>(s.tokens),
                  static_cast<long long>(s.head_dim), s.causal ? " causal" : "", mib(bytes),
                  static_cast<double>(bytes) / static_cast<double>(inputs));
    }
    std::printf("runtime workspace held now: %.1f MiB\n", mib(sagejit::workspace_bytes_held()));
    gpu->destroy_event(start);
    gpu->destroy_event(stop);
    sagejit::release_workspaces();
    for (void* buffer : buffers) gpu->free(buffer);
    return 0;
  } catch (const sagejit::Error& error) {
    std::fprintf(stderr, "sagejit error (%s): %s\n", sagejit::to_string(error.code()), error.what());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
