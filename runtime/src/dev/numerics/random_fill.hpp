#pragma once
// Seeded random inputs for the oracles' tests (docs/NUMERICS.md, "Oracles": normal values, K with large
// per-channel offsets, rows of equal values). Values are rounded to the tensor's dtype (RNE).
#include <random>

#include "numerics/host_tensor.hpp"

namespace sagejit::numerics {

// Independent N(mean, stddev) values.
void fill_normal(HostTensor& tensor, std::mt19937_64& rng, double mean = 0.0, double stddev = 1.0);

// N(0, 1) values plus a per-(batch, head, channel) offset drawn once from N(0, offset_stddev): the
// channel-wise bias of real K tensors that K smoothing removes.
void fill_channel_offsets(HostTensor& tensor, std::mt19937_64& rng, double offset_stddev);

// Every (batch, head, token) row holds one N(0, stddev) value in all of its channels.
void fill_equal_rows(HostTensor& tensor, std::mt19937_64& rng, double stddev = 1.0);

}  // namespace sagejit::numerics
