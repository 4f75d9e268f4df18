#include "support/compile_job.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "core/target.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "jit/jit.hpp"

namespace sagejit::tools {

KeyedJob key_job(const CompileJob& job) {
  KernelBuild build = plan_build(*job.kernel, job.config, job.spec, job.target, *job.compiler);
  return KeyedJob{job, std::move(build.rendered), build.key, std::move(build.label)};
}

CacheLookup build_job(CodeCache& cache, const KeyedJob& job) {
  return build_code_object(cache, KernelBuild{job.rendered, job.key, job.label}, *job.job.compiler);
}

std::string specialization_text(const Specialization& spec) {
  std::string text = fmt::format("{} d{}", to_string(static_cast<DType>(spec.dtype)), spec.head_dim);
  if (spec.causal) text += " causal";
  if (spec.write_lse) text += " lse";
  if (spec.v.pv_fp16) text += " pv=fp16";
  if (spec.key_mask) text += " mask";  // also in emit_file_name: a masked object never overwrites its unmasked twin
  return text;
}

std::string specialization_tag(const Specialization& spec) {
  std::string tag = specialization_text(spec);
  for (char& c : tag)
    if (c == ' ' || c == '=') c = '-';
  return tag;
}

std::string emit_file_name(const std::string& kernel, const TileConfig& config, const Specialization& spec,
                           const std::string& target) {
  std::string id = config_id(config);
  std::replace(id.begin(), id.end(), ',', '_');
  id.erase(std::remove(id.begin(), id.end(), '='), id.end());
  if (id.empty()) id = "default";
  std::string file_target = target;
  std::replace(file_target.begin(), file_target.end(), ':', '_');
  return fmt::format("{}.{}.{}.{}{}", kernel, id, specialization_tag(spec), file_target,
                     is_nvidia_target(target) ? ".cubin" : ".co");
}

}  // namespace sagejit::tools
