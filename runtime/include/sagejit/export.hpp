#pragma once
// Symbols of the public C++ API and the C ABI are the only ones the shared library exports.
#if defined(_WIN32)
#define SAGEJIT_API
#else
#define SAGEJIT_API __attribute__((visibility("default")))
#endif
