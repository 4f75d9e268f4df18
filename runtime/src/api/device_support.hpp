#pragma once
// Which devices a call can run on: the GPU backend in use, the device's arch, and whether that arch
// has attention kernels and tuning tables.
#include <string>
#include <vector>

#include "device/device.hpp"

namespace sagejit {

// Archs (tuning-table names, aliases included) for which the registry has an attention and a prepare
// kernel, sorted: what a user's device must be.
std::vector<std::string> attention_archs();

// Throws Error(unsupported) naming `target` and attention_archs() when the arch has no kernels.
void check_arch_has_kernels(const std::string& target);

struct CallDevice {
  Device* backend = nullptr;
  DeviceInfo info;
};

// The default backend, after the range and arch checks of `ordinal` (made once per ordinal): what a
// call needs of its device, with nothing copied. Throws like resolve_device.
Device& checked_backend(int ordinal);

// The default backend's device `ordinal` with its (cached) info, after the range and arch checks.
// Throws Error(runtime_not_found) without a GPU runtime, Error(invalid_argument) for an ordinal out of
// range, Error(unsupported) for an arch without kernels.
CallDevice resolve_device(int ordinal);

}  // namespace sagejit
