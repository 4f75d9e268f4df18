#include <doctest/doctest.h>

#include <string>

#include "core/build_report.hpp"
#include "core/error.hpp"
#include "core/embedded_file.hpp"

TEST_CASE("build report names a semantic version and the embedded files") {
  const auto report = sagejit::build_report();
  CHECK(report.version == "0.1.0");
  CHECK_FALSE(report.cxx_compiler.empty());
  // Every kernel source and tuning table must be embedded: the library needs no file at run time.
  CHECK(report.embedded_kernel_files >= 1);
  bool found_params = false;
  for (std::size_t i = 0; i < sagejit::embedded_kernel_files_count; ++i) {
    const auto& file = sagejit::embedded_kernel_files[i];
    if (std::string(file.path) == "common/params.h") {
      found_params = true;
      CHECK(file.contents.find("struct SjAttentionParams") != std::string_view::npos);
    }
  }
  CHECK(found_params);
}

TEST_CASE("errors carry their code and a formatted message") {
  try {
    sagejit::fail(sagejit::ErrorCode::unsupported, "head_dim {} is not one of [64, 128]", 96);
    FAIL("fail() returned");
  } catch (const sagejit::Error& e) {
    CHECK(e.code() == sagejit::ErrorCode::unsupported);
    CHECK(std::string(e.what()) == "head_dim 96 is not one of [64, 128]");
  }
}
