#pragma once
// A dlopen'ed shared library. GPU runtimes and compilers are loaded at run time so that one build of
// sagejit loads (and runs its CPU paths) on machines without CUDA or ROCm; when nothing loads, the
// error lists every candidate tried and why each failed, which is what a user needs to fix it.
#include <optional>
#include <string>
#include <vector>

namespace sagejit {

class DynamicLibrary {
 public:
  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  // Tries each candidate (a soname for the dynamic linker's search, or an absolute path) in order
  // and returns the first that loads and, when required_symbol is given, exports that symbol.
  // Appends one line per failed candidate to `attempts` ("libcuda.so.1: <dlerror text>").
  static std::optional<DynamicLibrary> open_first(const std::vector<std::string>& candidates,
                                                  std::vector<std::string>& attempts,
                                                  const char* required_symbol = nullptr);

  // Resolves a symbol; throws Error(runtime_not_found) naming the library and the symbol.
  void* symbol(const char* name) const;
  // Resolves a symbol, nullptr when absent (for entry points that only newer versions have).
  void* optional_symbol(const char* name) const noexcept;

  template <typename Function>
  void resolve(Function*& target, const char* name) const {
    target = reinterpret_cast<Function*>(symbol(name));
  }
  template <typename Function>
  void resolve_optional(Function*& target, const char* name) const {
    target = reinterpret_cast<Function*>(optional_symbol(name));
  }

  // The candidate name that loaded ("libcuda.so.1") and the file it resolved to
  // ("/usr/lib/x86_64-linux-gnu/libcuda.so.560.35.03", symlinks followed).
  const std::string& name() const noexcept { return name_; }
  const std::string& path() const noexcept { return path_; }

 private:
  DynamicLibrary(void* handle, std::string name, std::string path);
  void* handle_ = nullptr;
  std::string name_;
  std::string path_;
};

// The candidates for open_first: each soname as given (the dynamic linker's search), then each soname
// under each of `install_dirs` in order (toolkits that install without registering with the linker).
std::vector<std::string> library_candidates(const std::vector<std::string>& sonames,
                                            const std::vector<std::string>& install_dirs);

// "tried: a (why), b (why)" for error messages.
std::string describe_attempts(const std::vector<std::string>& attempts);

}  // namespace sagejit
