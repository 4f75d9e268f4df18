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

  // A new handle to a library this process has already loaded (`path` as the dynamic linker lists
  // it, see loaded_library_paths), never loading anything; nullopt when it is not loaded.
  static std::optional<DynamicLibrary> open_loaded(const std::string& path);
  // Another handle to this same library (it stays loaded while any handle lives).
  std::optional<DynamicLibrary> another_handle() const { return open_loaded(mapped_name_); }

  // Resolves a symbol; throws Error(runtime_not_found) naming the library and the symbol.
  void* symbol(const char* name) const;
  // Resolves a symbol, nullptr when absent (for entry points that only newer versions have).
  void* optional_symbol(const char* name) const noexcept;

  // The candidate name that loaded ("libcuda.so.1") and the file it resolved to
  // ("/usr/lib/x86_64-linux-gnu/libcuda.so.560.35.03", symlinks followed).
  const std::string& name() const noexcept { return name_; }
  const std::string& path() const noexcept { return path_; }
  // The directory the dynamic linker found it in, symlinks of the directory followed
  // ("/opt/rocm/lib/libamdhip64.so.6" -> "/opt/rocm-6.4.1/lib"): which installation it belongs to.
  const std::string& directory() const noexcept { return directory_; }

 private:
  DynamicLibrary(void* handle, std::string name);
  void* handle_ = nullptr;
  std::string name_;
  std::string mapped_name_;  // the path the dynamic linker mapped (its link_map name)
  std::string path_;
  std::string directory_;
};

// The files of every shared library loaded in this process, as the dynamic linker names them
// (dl_iterate_phdr), in load order; the main program is left out.
std::vector<std::string> loaded_library_paths();

// "tried: a (why), b (why)" for error messages.
std::string describe_attempts(const std::vector<std::string>& attempts);

}  // namespace sagejit
