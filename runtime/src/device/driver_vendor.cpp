#include "device/driver_vendor.hpp"

#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"

namespace sagejit {
namespace {

template <typename Function>
void resolve_newest(const DynamicLibrary& library, Function*& target, const char* name) {
  for (const auto& newer : driver_api::kNewerSymbols)
    if (std::string_view(newer.name) == name) library.resolve_optional(target, newer.newer);
  if (target == nullptr) library.resolve(target, name);
}

#define SAGEJIT_DRIVER_RESOLVE(member, cuda, hip, signature) resolve_newest(library, api.member, names.member);

driver_api::Functions resolve_common(const DynamicLibrary& library, const driver_api::Names& names) {
  driver_api::Functions api;
  SAGEJIT_DRIVER_CALLS(SAGEJIT_DRIVER_RESOLVE)
  return api;
}

}  // namespace

DriverVendor::DriverVendor(const DynamicLibrary& library, const DriverLabels& labels, const driver_api::Names& names,
                           const DriverAttributes& attributes)
    : labels_(labels), names_(names), api_(resolve_common(library, names)), attributes_(attributes) {}

void DriverVendor::check(driver_api::Result result, std::string_view call) const {
  if (result != driver_api::kSuccess)
    fail(ErrorCode::device_error, "{} call {} failed: {}", labels_.api, call, error_name(result));
}

void DriverVendor::encode_tensor_map(const TensorMapRequest&, void*) const {
  fail(ErrorCode::unsupported, "encode_tensor_map: the {} has no tensor maps", labels_.api);
}

}  // namespace sagejit
