#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "random_support.hpp"
#include "skip_support.hpp"

namespace {

std::mutex skip_mutex;
std::string running_case;           // the test case a skip belongs to
std::vector<std::string> skipped;   // "<test case>: <reason>"

// One listener for the whole suite: it names the running test case for SAGEJIT_SKIP, and a failed
// test case that drew random data says how to replay it (SAGEJIT_TEST_SEED).
struct SuiteListener : doctest::IReporter {
  explicit SuiteListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& data) override {
    std::lock_guard lock(skip_mutex);
    running_case = data.m_name;
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
    const std::string hint = sagejit::test::replay_hint();
    if (!stats.testCaseSuccess && !hint.empty())
      std::fprintf(stderr, "random test failed: replay with %s and the same test binary and arguments\n", hint.c_str());
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

REGISTER_LISTENER("suite", 1, SuiteListener);

void sagejit::test::record_skip(const std::string& reason) {
  MESSAGE("skipped: " << reason);
  std::lock_guard lock(skip_mutex);
  skipped.push_back(running_case + ": " + reason);
}

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit() || result != 0) return result;
  std::lock_guard lock(skip_mutex);
  if (skipped.empty()) return 0;
  // One line per skip, read back by tools/scripts/skip_report.py from ctest's JUnit output.
  for (const std::string& skip : skipped) std::printf("SAGEJIT-SKIP: %s\n", skip.c_str());
  std::fflush(stdout);
  return sagejit::test::kSkipExitCode;
}
