#include "support/oracle_check.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "dev/numerics/reference.hpp"

namespace sagejit::tools {

OracleVerdict judge_output(const OracleInputs& inputs, const numerics::HostTensor& out, const std::vector<float>& lse) {
  OracleVerdict verdict;
  const numerics::EmulatorResult emulated =
      numerics::emulate(inputs.q->view(), inputs.k->view(), inputs.v->view(), inputs.layout, inputs.options);
  const numerics::ReferenceResult reference = numerics::reference_attention(
      inputs.q->view(), inputs.k->view(), inputs.v->view(), inputs.layout, inputs.options.causal, inputs.options.sm_scale);
  verdict.vs_emulator = numerics::measure_accuracy(out.host_view(), numerics::to_doubles(emulated.out.host_view()));
  verdict.vs_reference = numerics::measure_accuracy(out.host_view(), reference.out);

  std::vector<std::string> problems;
  if (verdict.vs_emulator.non_finite > 0)
    problems.push_back(fmt::format("{} non-finite outputs (unwritten or NaN)", verdict.vs_emulator.non_finite));
  if (!(verdict.vs_emulator.cosine >= min_cosine_vs_emulator) || !(verdict.vs_emulator.relative_l1 <= max_rel_l1_vs_emulator))
    problems.push_back(fmt::format("differs from the emulator: {} (need cos >= {}, rel-L1 <= {})", verdict.vs_emulator,
                                   min_cosine_vs_emulator, max_rel_l1_vs_emulator));
  if (!(verdict.vs_reference.cosine >= min_cosine_vs_reference))
    problems.push_back(fmt::format("quality vs fp64: {} (need cos >= {})", verdict.vs_reference, min_cosine_vs_reference));
  if (inputs.options.return_lse) {
    if (lse.size() != reference.lse.size() || emulated.lse.size() != reference.lse.size()) {
      problems.push_back(fmt::format("LSE has {} values, expected {}", lse.size(), reference.lse.size()));
    } else {
      // A non-finite difference (NaN, or infinities that do not cancel) counts as infinite.
      const auto widen = [](double& worst, double a, double b) {
        const double error = std::abs(a - b);
        worst = std::isfinite(error) ? std::max(worst, error) : INFINITY;
      };
      for (std::size_t i = 0; i < lse.size(); ++i) {
        widen(verdict.lse_error_vs_emulator, lse[i], emulated.lse[i]);
        widen(verdict.lse_error_vs_reference, lse[i], reference.lse[i]);
        widen(verdict.emulator_lse_error_vs_reference, emulated.lse[i], reference.lse[i]);
      }
      if (!(verdict.lse_error_vs_emulator <= max_lse_error))
        problems.push_back(fmt::format("LSE max abs difference from the emulator {:.4g} (need <= {})",
                                       verdict.lse_error_vs_emulator, max_lse_error));
      const double reference_bar = verdict.emulator_lse_error_vs_reference + max_lse_error;
      if (!(verdict.lse_error_vs_reference <= reference_bar))
        problems.push_back(fmt::format("LSE max abs error vs fp64 {:.4g} (need <= {:.4g}: the emulator's own {:.4g} + {})",
                                       verdict.lse_error_vs_reference, reference_bar,
                                       verdict.emulator_lse_error_vs_reference, max_lse_error));
    }
  }
  verdict.passed = problems.empty();
  for (const std::string& problem : problems) verdict.failure += (verdict.failure.empty() ? "" : "; ") + problem;
  return verdict;
}

}  // namespace sagejit::tools
