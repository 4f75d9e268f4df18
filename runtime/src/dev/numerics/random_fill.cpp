#include "dev/numerics/random_fill.hpp"

#include <vector>

namespace sagejit::numerics {

void fill_normal(HostTensor& tensor, std::mt19937_64& rng, double mean, double stddev) {
  std::normal_distribution<double> normal(mean, stddev);
  const Dims& x = tensor.dims();
  for (std::int64_t b = 0; b < x.batch; ++b)
    for (std::int64_t h = 0; h < x.heads; ++h)
      for (std::int64_t n = 0; n < x.tokens; ++n)
        for (std::int64_t d = 0; d < x.head_dim; ++d) tensor.set(b, h, n, d, static_cast<float>(normal(rng)));
}

void fill_channel_offsets(HostTensor& tensor, std::mt19937_64& rng, double offset_stddev) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::normal_distribution<double> offset_distribution(0.0, offset_stddev);
  const Dims& x = tensor.dims();
  std::vector<double> offset(static_cast<std::size_t>(x.head_dim));
  for (std::int64_t b = 0; b < x.batch; ++b)
    for (std::int64_t h = 0; h < x.heads; ++h) {
      for (double& o : offset) o = offset_distribution(rng);
      for (std::int64_t n = 0; n < x.tokens; ++n)
        for (std::int64_t d = 0; d < x.head_dim; ++d)
          tensor.set(b, h, n, d, static_cast<float>(normal(rng) + offset[static_cast<std::size_t>(d)]));
    }
}

void fill_equal_rows(HostTensor& tensor, std::mt19937_64& rng, double stddev) {
  std::normal_distribution<double> normal(0.0, stddev);
  const Dims& x = tensor.dims();
  for (std::int64_t b = 0; b < x.batch; ++b)
    for (std::int64_t h = 0; h < x.heads; ++h)
      for (std::int64_t n = 0; n < x.tokens; ++n) {
        const float value = static_cast<float>(normal(rng));
        for (std::int64_t d = 0; d < x.head_dim; ++d) tensor.set(b, h, n, d, value);
      }
}

}  // namespace sagejit::numerics
