#include "support/shape.hpp"

#include <charconv>
#include <cmath>
#include <sstream>

#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/kernel_inputs.hpp"
#include "plan/attention_plan.hpp"
#include "platform/safe_file.hpp"

namespace sagejit::tools {

namespace {

// "bf16|fp16" (separator "|") or "bf16, fp16": the kernels' dtypes (core/kernel_inputs.hpp).
std::string dtype_names(std::string_view separator) { return fmt::format("{}", fmt::join(kernel_dtype_names(), separator)); }

// "B,H,Nq,Nk,D[,causal][,bf16|fp16][,gqa=R]"
const std::string shape_form = fmt::format("B,H,Nq,Nk,D[,causal][,{}][,gqa=R]", dtype_names("|"));

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

int parse_positive(std::string_view field, std::string_view name, std::string_view text, std::string_view what) {
  int value = 0;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (error != std::errc() || end != field.data() + field.size() || value < 1)
    fail(ErrorCode::invalid_argument, "{} \"{}\": {} \"{}\" is not a positive integer (form: {})", what, text, name,
         field, shape_form);
  return value;
}

}  // namespace

double AttentionShape::operations() const {
  const double full = 4.0 * batch * heads_q * static_cast<double>(seq_q) * seq_kv * head_dim;
  return causal ? full / 2.0 : full;
}

std::string AttentionShape::text() const {
  std::string text = fmt::format("{},{},{},{},{}", batch, heads_q, seq_q, seq_kv, head_dim);
  if (causal) text += ",causal";
  text += fmt::format(",{}", to_string(dtype));
  if (gqa_ratio != 1) text += fmt::format(",gqa={}", gqa_ratio);
  return text;
}

AttentionCall AttentionShape::call() const {
  AttentionCall call;
  call.batch = batch;
  call.heads_q = heads_q;
  call.heads_kv = heads_kv();
  call.seq_q = seq_q;
  call.seq_kv = seq_kv;
  call.head_dim = head_dim;
  call.dtype = dtype;
  call.causal = causal;
  call.sm_scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return call;
}

ProblemKey AttentionShape::problem_key(const std::string& arch) const {
  return {.kernel = "attention", .arch = arch, .dtype = dtype, .head_dim = kernel_head_dim_for(head_dim), .causal = causal,
          .gqa_ratio = gqa_ratio, .seq_q = seq_q, .seq_kv = seq_kv};
}

AttentionShape parse_shape(std::string_view text, std::string_view what) {
  std::vector<std::string_view> fields;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    fields.push_back(trim(rest.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (fields.size() < 5)
    fail(ErrorCode::invalid_argument, "{} \"{}\" has {} fields; expected at least 5 ({})", what, text, fields.size(),
         shape_form);
  AttentionShape shape;
  shape.batch = parse_positive(fields[0], "B", text, what);
  shape.heads_q = parse_positive(fields[1], "H", text, what);
  shape.seq_q = parse_positive(fields[2], "Nq", text, what);
  shape.seq_kv = parse_positive(fields[3], "Nk", text, what);
  shape.head_dim = parse_positive(fields[4], "D", text, what);
  try {
    check_head_dim(shape.head_dim);  // the attention plan's rule
  } catch (const Error&) {
    fail(ErrorCode::invalid_argument, "{} \"{}\": D {} is not supported (accepted: {})", what, text, shape.head_dim,
         accepted_head_dims_text());
  }
  bool dtype_seen = false, causal_seen = false, gqa_seen = false;
  for (std::size_t i = 5; i < fields.size(); ++i) {
    const std::string_view field = fields[i];
    const auto repeated = [&](bool& seen, std::string_view name) {
      if (seen) fail(ErrorCode::invalid_argument, "{} \"{}\": {} is given twice", what, text, name);
      seen = true;
    };
    if (field == "causal") {
      repeated(causal_seen, "causal");
      shape.causal = true;
    } else if (const std::optional<DType> dtype = kernel_dtype_named(field)) {
      repeated(dtype_seen, "the dtype");
      shape.dtype = *dtype;
    } else if (field.rfind("gqa=", 0) == 0) {
      repeated(gqa_seen, "gqa=");
      shape.gqa_ratio = parse_positive(field.substr(4), "gqa", text, what);
    } else {
      fail(ErrorCode::invalid_argument, "{} \"{}\": unknown field \"{}\" (accepted after D: causal, {}, gqa=R)", what,
           text, field, dtype_names(", "));
    }
  }
  if (shape.heads_q % shape.gqa_ratio != 0)
    fail(ErrorCode::invalid_argument, "{} \"{}\": H {} is not a multiple of gqa={}", what, text, shape.heads_q,
         shape.gqa_ratio);
  return shape;
}

namespace {
constexpr std::size_t shapes_file_max_bytes = std::size_t{1} << 20;
}  // namespace

std::vector<AttentionShape> read_shapes_file(const std::string& path) {
  // A shapes file is a short list; a FIFO or a device is refused instead of hanging or flooding.
  std::istringstream in([&] {
    try {
      return read_regular_text_file(path, shapes_file_max_bytes, ErrorCode::invalid_argument,
                                    "--shapes files are at most 1 MiB");
    } catch (const Error& error) {
      fail(ErrorCode::invalid_argument, "--shapes: {}", error.what());
    }
  }());
  std::vector<AttentionShape> shapes;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::string_view content = line;
    content = trim(content.substr(0, content.find('#')));
    if (content.empty()) continue;
    shapes.push_back(parse_shape(content, fmt::format("{}:{}", path, number)));
  }
  if (shapes.empty()) fail(ErrorCode::invalid_argument, "--shapes: \"{}\" holds no shape (form: {})", path, shape_form);
  return shapes;
}

AttentionShape shape_of_problem(const ProblemKey& key) {
  AttentionShape shape;
  shape.dtype = key.dtype;
  shape.head_dim = key.head_dim;
  shape.causal = key.causal;
  shape.gqa_ratio = std::max(1, key.gqa_ratio);
  shape.seq_q = key.seq_q;
  shape.seq_kv = key.seq_kv;
  shape.heads_q = shape.gqa_ratio;
  while (shape.heads_q < 8) shape.heads_q += shape.gqa_ratio;
  return shape;
}

}  // namespace sagejit::tools
