// Rendering: include inlining (each file once, #pragma once honoured, #line directives), missing
// includes reported with file:line, defines emitted; the registry's probe kernel renders.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cache_test_support.hpp"
#include "core/error.hpp"
#include "kernels/registry.hpp"
#include "jit/render.hpp"

using namespace sagejit;

namespace {

std::size_t count(const std::string& text, const std::string& needle) { return test::count_occurrences(text, needle); }

}  // namespace

TEST_CASE("render inlines each embedded include once, with #line directives and defines first") {
  // Random marker text so the assertions are about this render, not about a fixed string.
  const std::string marker_a = test::random_text(12), marker_b = test::random_text(12);
  const std::string main_text = "#include \"lib/a.h\"\n#include \"lib/b.h\"\nint main_marker;\n";
  const std::string a_text = "#pragma once\n#include \"b.h\"\nint " + marker_a + ";\n";
  const std::string b_text = "  #  pragma once\nint " + marker_b + ";\n#include <stdint.h>\n";
  const std::vector<EmbeddedFile> files{{"main.cu", main_text}, {"lib/a.h", a_text}, {"lib/b.h", b_text}};
  const int value = static_cast<int>(test::rng()() % 1000);
  const std::string source = render_source("main.cu", {{"SJ_VALUE", std::to_string(value)}, {"SJ_FLAG", "1"}}, files);

  CHECK(count(source, "int " + marker_a + ";") == 1);
  CHECK(count(source, "int " + marker_b + ";") == 1);  // included by a.h (relative) and by main.cu: once
  CHECK(count(source, "pragma once") == 0);
  CHECK(count(source, "#include <stdint.h>") == 1);  // system includes are left to the compiler
  CHECK(count(source, "#include \"") == 0);
  // Defines come first, in order.
  CHECK(source.rfind("#define SJ_VALUE " + std::to_string(value) + "\n#define SJ_FLAG 1\n", 0) == 0);
  // b.h is reached through a.h first: its text comes before a.h's marker, and after it the line
  // numbering of a.h resumes at line 3.
  CHECK(source.find(marker_b) < source.find(marker_a));
  CHECK(count(source, "#line 1 \"lib/b.h\"") == 1);
  CHECK(count(source, "#line 3 \"lib/a.h\"") == 1);
  CHECK(count(source, "#line 1 \"main.cu\"") == 1);
  CHECK(count(source, "#line 2 \"main.cu\"") == 1);
  // main.cu's second include (b.h, already inlined) becomes a blank line, so numbering runs on.
  CHECK(count(source, "#line 2 \"main.cu\"\n\nint main_marker;\n") == 1);
}

TEST_CASE("render keeps the original line of each inlined file's text") {
  // After "#line 1 \"x.h\"" the N-th following line must be line N of x.h.
  const std::string header = "#pragma once\n// two\nint line_three;\n";
  const std::vector<EmbeddedFile> files{{"k.cu", "#include \"x.h\"\nint k_line_two;\n"}, {"x.h", header}};
  const std::string source = render_source("k.cu", {}, files);
  const auto start = source.find("#line 1 \"x.h\"\n");
  REQUIRE(start != std::string::npos);
  const auto after = source.substr(start + std::string("#line 1 \"x.h\"\n").size());
  CHECK(after.rfind("\n// two\nint line_three;\n#line 2 \"k.cu\"\nint k_line_two;\n", 0) == 0);
}

TEST_CASE("render reports a missing include with the including file and line") {
  const std::vector<EmbeddedFile> files{{"k.cu", "#include \"ok.h\"\n"}, {"ok.h", "// fine\n\n#include \"gone.h\"\n"}};
  try {
    (void)render_source("k.cu", {}, files);
    FAIL("no error for a missing include");
  } catch (const Error& error) {
    CHECK(std::string(error.what()).find("ok.h:3") != std::string::npos);
    CHECK(std::string(error.what()).find("gone.h") != std::string::npos);
  }
  CHECK_THROWS_AS(render_source("absent.cu", {}, files), Error);
  CHECK_THROWS_AS(render_source("k.cu", {{"1BAD", "1"}}, {{{"k.cu", "\n"}}}), Error);
  CHECK_THROWS_AS(render_source("k.cu", {{"SJ_X", "1\n#define Y 2"}}, {{{"k.cu", "\n"}}}), Error);
}

TEST_CASE("config ids are sorted key=value lists") {
  const int block = 64 << (test::rng()() % 3);
  CHECK(config_id({{"warps", 4}, {"block", block}}) == "block=" + std::to_string(block) + ",warps=4");
  CHECK(config_id({}) == "");
}

TEST_CASE("the prepare kernel renders with the shared constants header inlined once") {
  // kernel_src/common/constants.h is embedded like every kernel_src header (the build's glob) and
  // reached twice (prepare.cu and common/quant.h): #pragma once keeps one copy.
  const RenderedKernel rendered = render_kernel(kernel_by_name("prepare"), {{"threads", 256}}, {}, "gfx1201");
  const std::string marker = "#line 1 \"common/constants.h\"";
  const std::size_t first = rendered.source.find(marker);
  REQUIRE(first != std::string::npos);
  CHECK(rendered.source.find(marker, first + 1) == std::string::npos);
  CHECK(rendered.source.find("#define SJ_SEQ_PAD 128") != std::string::npos);
}

TEST_CASE("the probe kernel is registered and renders from the embedded sources") {
  const KernelDesc& probe = find_kernel("jit_probe", "gfx1201:xnack-");
  CHECK(&probe == &kernel_by_name("jit_probe"));
  const int scale = 2 + static_cast<int>(test::rng()() % 50);
  const RenderedKernel rendered = render_kernel(probe, {{"block", 256}, {"scale", scale}}, {}, "gfx1201:xnack-");
  CHECK(rendered.name == "jit_probe.block=256,scale=" + std::to_string(scale) + ".gfx1201");
  CHECK(rendered.target == "gfx1201:xnack-");
  CHECK(rendered.entries == std::vector<std::string>{"sagejit_probe_axpy"});
  CHECK(rendered.source.find("#define SJ_PROBE_SCALE " + std::to_string(scale) + "\n") != std::string::npos);
  CHECK(rendered.source.find("#line 1 \"common/prelude.h\"") != std::string::npos);
  CHECK(rendered.source.find("#line 1 \"common/params.h\"") != std::string::npos);
  CHECK(rendered.source.find("#include \"") == std::string::npos);
  CHECK_THROWS_AS(render_kernel(probe, {{"block", 100}}, {}, "sm_90"), Error);
  CHECK_THROWS_AS(find_kernel("no_such_family", "sm_90"), Error);
  CHECK_THROWS_AS(kernel_by_name("no_such_kernel"), Error);
}

TEST_CASE("every registered kernel's source resolves all its includes") {
  for (const KernelDesc* desc : all_kernels()) {
    try {
      const std::string source = render_source(desc->source_path, {}, embedded_kernel_sources());
      CHECK(source.find("#include \"") == std::string::npos);
    } catch (const Error& error) {
      FAIL_CHECK(desc->name << ": " << error.what());
    }
  }
}
