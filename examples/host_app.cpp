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
#include <initializer_list>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <sagejit/sagejit.hpp>

namespace {

void check(int status, const char* call) {
  if (status != 0) throw std::runtime_error(std::string(call) + " failed with status " + std::to_string(status));
}

// A GPU runtime entry point and the symbol it came from; a call that fails throws, naming it.
template <typename Function>
struct Call {
  Function function = nullptr;
  const char* symbol = nullptr;
  template <typename... Args>
  void operator()(Args... args) const {
    check(function(args...), symbol);
  }
};

// The few device calls the example needs, on device 0 (null stream: the default stream, which
// sagejit::attention(..., nullptr) also uses). Every failure throws std::runtime_error. One class
// serves the CUDA driver API and the HIP runtime: HIP mirrors the driver API call for call (device
// memory is a CUdeviceptr in CUDA and a void* in HIP, the same 64-bit argument); the calls only one
// of them has are marked.
class GpuRuntime {
 public:
  // The first runtime with a device (CUDA, then HIP), or nullptr with the reasons in `why`.
  static std::unique_ptr<GpuRuntime> open(std::string& why) {
    std::string cuda_why, hip_why;
    if (auto gpu = open_cuda(cuda_why)) return gpu;
    if (auto gpu = open_hip(hip_why)) return gpu;
    why = cuda_why + "; " + hip_why;
    return nullptr;
  }

  std::string name() const {
    char name[256] = {};
    device_name_(name, static_cast<int>(sizeof name), device_);
    return name;
  }
  void* allocate(std::size_t bytes) {
    void* pointer = nullptr;
    alloc_(&pointer, bytes);
    return pointer;
  }
  void upload(void* device, const void* host, std::size_t bytes) {
    if (cuda_copy_.function != nullptr)
      cuda_copy_(device, host, bytes);
    else
      hip_copy_(device, host, bytes, 1 /* hipMemcpyHostToDevice */);
  }
  void free(void* device) { free_(device); }
  void* create_event() {
    void* event = nullptr;
    if (cuda_event_create_.function != nullptr)
      cuda_event_create_(&event, 0u);
    else
      hip_event_create_(&event);
    return event;
  }
  void record_event(void* event) { event_record_(event, static_cast<void*>(nullptr)); }
  float elapsed_ms(void* start, void* stop) {  // after both events completed
    float ms = 0;
    event_elapsed_(&ms, start, stop);
    return ms;
  }
  void destroy_event(void* event) { event_destroy_(event); }
  void synchronize() { synchronize_(); }

 private:
  // dlsym into `call`; false when the library lacks the symbol.
  template <typename Function>
  static bool resolve(void* library, const char* symbol, Call<Function>& call) {
    call.function = reinterpret_cast<Function>(dlsym(library, symbol));
    call.symbol = symbol;
    return call.function != nullptr;
  }

  // A runtime over the first of `libraries` that dlopen loads, with the calls both vendors have
  // resolved (by this vendor's symbols); nullptr with `why` set to `missing` or `lacking`.
  static std::unique_ptr<GpuRuntime> load(std::initializer_list<const char*> libraries, const char* const (&symbols)[8],
                                          const char* missing, const char* lacking, void*& library, std::string& why) {
    for (const char* name : libraries)
      if ((library = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    std::unique_ptr<GpuRuntime> gpu(new GpuRuntime);
    why = library == nullptr ? missing : lacking;
    if (library == nullptr || !resolve(library, symbols[0], gpu->device_count_) ||
        !resolve(library, symbols[1], gpu->device_name_) || !resolve(library, symbols[2], gpu->synchronize_) ||
        !resolve(library, symbols[3], gpu->alloc_) || !resolve(library, symbols[4], gpu->free_) ||
        !resolve(library, symbols[5], gpu->event_record_) || !resolve(library, symbols[6], gpu->event_elapsed_) ||
        !resolve(library, symbols[7], gpu->event_destroy_))
      return nullptr;
    return gpu;
  }

  // The CUDA driver API on the primary context of device 0 (the context sagejit uses too).
  static std::unique_ptr<GpuRuntime> open_cuda(std::string& why) {
    void* library = nullptr;
    auto cuda = load({"libcuda.so.1"},
                     {"cuDeviceGetCount", "cuDeviceGetName", "cuCtxSynchronize", "cuMemAlloc_v2", "cuMemFree_v2",
                      "cuEventRecord", "cuEventElapsedTime", "cuEventDestroy_v2"},
                     "no CUDA driver (libcuda.so.1)", "libcuda.so.1 lacks a driver API function", library, why);
    Call<int (*)(unsigned)> init;
    Call<int (*)(int*, int)> device_get;
    Call<int (*)(void**, int)> retain;
    Call<int (*)(void*)> set_current;
    if (!cuda || !resolve(library, "cuInit", init) || !resolve(library, "cuDeviceGet", device_get) ||
        !resolve(library, "cuDevicePrimaryCtxRetain", retain) || !resolve(library, "cuCtxSetCurrent", set_current) ||
        !resolve(library, "cuMemcpyHtoD_v2", cuda->cuda_copy_) ||
        !resolve(library, "cuEventCreate", cuda->cuda_event_create_))
      return nullptr;
    int count = 0;
    if (init.function(0) != 0 || cuda->device_count_.function(&count) != 0 || count < 1) {
      why = "no CUDA device";
      return nullptr;
    }
    void* context = nullptr;
    device_get(&cuda->device_, 0);
    retain(&context, cuda->device_);
    set_current(context);
    return cuda;
  }

  // The HIP runtime on device 0.
  static std::unique_ptr<GpuRuntime> open_hip(std::string& why) {
    void* library = nullptr;
    auto hip = load({"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"},
                    {"hipGetDeviceCount", "hipDeviceGetName", "hipDeviceSynchronize", "hipMalloc", "hipFree",
                     "hipEventRecord", "hipEventElapsedTime", "hipEventDestroy"},
                    "no HIP runtime (libamdhip64.so)", "libamdhip64.so lacks a runtime API function", library, why);
    Call<int (*)(int)> set_device;
    if (!hip || !resolve(library, "hipSetDevice", set_device) || !resolve(library, "hipMemcpy", hip->hip_copy_) ||
        !resolve(library, "hipEventCreate", hip->hip_event_create_))
      return nullptr;
    int count = 0;
    if (hip->device_count_.function(&count) != 0 || count < 1) {
      why = "no HIP device";
      return nullptr;
    }
    set_device(0);
    return hip;
  }

  GpuRuntime() = default;

  int device_ = 0;  // what device queries take: CUDA's handle of device 0; HIP's take the ordinal, 0
  Call<int (*)(int*)> device_count_;
  Call<int (*)(char*, int, int)> device_name_;
  Call<int (*)()> synchronize_;
  Call<int (*)(void**, std::size_t)> alloc_;
  Call<int (*)(void*)> free_;
  Call<int (*)(void*, void*)> event_record_;
  Call<int (*)(float*, void*, void*)> event_elapsed_;
  Call<int (*)(void*)> event_destroy_;
  Call<int (*)(void*, const void*, std::size_t)> cuda_copy_;        // CUDA only: cuMemcpyHtoD_v2
  Call<int (*)(void**, unsigned)> cuda_event_create_;               // CUDA only: cuEventCreate(event, flags)
  Call<int (*)(void*, const void*, std::size_t, int)> hip_copy_;    // HIP only: hipMemcpy(..., kind)
  Call<int (*)(void**)> hip_event_create_;                          // HIP only: hipEventCreate(event)
};

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
  const std::unique_ptr<GpuRuntime> gpu = GpuRuntime::open(why);
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
