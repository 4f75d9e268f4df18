#pragma once
// Where the code that is running was loaded from, for what ships beside it (a wheel's system cache).
#include <filesystem>
#include <optional>

namespace sagejit {

// The directory of the package that holds this code: the directory of libsagejit.so when the runtime
// is that shared library, or the parent of the program's directory when the runtime is linked into a
// program (a wheel's programs live in <package>/_bin). nullopt when the path cannot be determined.
std::optional<std::filesystem::path> package_dir_of_this_binary();

}  // namespace sagejit
