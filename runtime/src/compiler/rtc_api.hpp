#pragma once
// The runtime-compiler entry points sagejit uses, restated from nvrtc.h (CUDA 12/13) and hiprtc.h
// (ROCm 5.2 .. 7.x) so the build needs neither toolkit's headers. hipRTC copies NVRTC's API one to
// one: the same calls, result codes and argument lists under another prefix ("nvrtcCompileProgram",
// "hiprtcCompileProgram"), except the code getter (nvrtcGetCUBIN, hiprtcGetCode). So one table of
// entry points serves both (symbol names: each RtcVendor's table in compiler/rtc_vendors.cpp).
#include <array>
#include <cstddef>

#include "platform/library_loader.hpp"

namespace sagejit::rtc_api {

using Result = int;  // nvrtcResult / hiprtcResult
struct Program_;
using Program = Program_*;  // nvrtcProgram / hiprtcProgram

inline constexpr Result kSuccess = 0;           // NVRTC_SUCCESS / HIPRTC_SUCCESS
inline constexpr Result kErrorCompilation = 6;  // NVRTC_ERROR_COMPILATION / HIPRTC_ERROR_COMPILATION

// hiprtc.h declares the header arrays as `const char**`, nvrtc.h as `const char* const*`: the same
// pointer in the ABI, so one signature calls both. Every member {}: a vendor names only its own calls.
struct Functions {
  Symbol<const char*(Result result)> get_error_string{};
  Symbol<Result(Program* program, const char* source, const char* name, int header_count, const char* const* headers,
                const char* const* include_names)>
      create_program{};
  Symbol<Result(Program* program)> destroy_program{};
  Symbol<Result(Program program, int option_count, const char* const* options)> compile_program{};
  Symbol<Result(Program program, std::size_t* size)> get_program_log_size{};
  Symbol<Result(Program program, char* log)> get_program_log{};
  Symbol<Result(Program program, std::size_t* size)> get_code_size{};
  Symbol<Result(Program program, char* code)> get_code{};
  Symbol<Result(int* major, int* minor)> version{};  // NVRTC only: hiprtcVersion answers a fixed 9.0

  // Resolved in this order; the first symbol missing is the one the error names.
  constexpr std::array<SymbolSlot*, 9> slots() {
    return {&get_error_string, &create_program, &destroy_program, &compile_program, &get_program_log_size,
            &get_program_log, &get_code_size, &get_code, &version};
  }
};
static_assert(slots_list_every_member<Functions>());

}  // namespace sagejit::rtc_api
