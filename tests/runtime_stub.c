/* A stand-in for a GPU runtime library (libamdhip64, libhiprtc, libnvrtc) for
 * tests/test_runtime_discovery.cpp: it exports the symbols the runtime discovery probes and reports
 * the version it was built as (SAGEJIT_STUB_VERSION), so a test can tell which copy was chosen.
 * Built once per kind and version by tests/runtime_discovery.cmake; nothing here is ever called
 * by the runtime beyond the version queries. */
#define STUB_EXPORT __attribute__((visibility("default")))

int STUB_EXPORT sagejit_stub_version(void) { return SAGEJIT_STUB_VERSION; }

/* Debian's ROCm 6.4 libamdhip64 exports hipRTC's symbols as well (HIP_WITH_HIPRTC). */
#if defined(SAGEJIT_STUB_HIP_WITH_HIPRTC)
#define SAGEJIT_STUB_HIP 1
#endif

#if defined(SAGEJIT_STUB_HIP) || defined(SAGEJIT_STUB_HIP_WITHOUT_INIT)
/* HIP_VERSION = major * 10'000'000 + minor * 100'000 + patch */
int STUB_EXPORT hipRuntimeGetVersion(int* version) {
  *version = SAGEJIT_STUB_VERSION * 10000000;
  return 0;
}
#endif

#if defined(SAGEJIT_STUB_HIP)
int STUB_EXPORT hipInit(unsigned flags) { return flags == 0 ? 0 : 1; }
#endif

/* ROCm 5 has hipRTC inside libamdhip64; later ROCm ship libhiprtc. */
#if defined(SAGEJIT_STUB_HIPRTC) || (defined(SAGEJIT_STUB_HIP) && SAGEJIT_STUB_VERSION == 5) || \
    defined(SAGEJIT_STUB_HIP_WITH_HIPRTC)
int STUB_EXPORT hiprtcCreateProgram(void) { return 1; /* HIPRTC_ERROR_OUT_OF_MEMORY: never compiles */ }
int STUB_EXPORT hiprtcVersion(int* major, int* minor) {
  *major = SAGEJIT_STUB_VERSION;
  *minor = 0;
  return 0;
}
#endif

#if defined(SAGEJIT_STUB_NVRTC)
int STUB_EXPORT nvrtcGetCUBIN(void) { return 1; }
int STUB_EXPORT nvrtcVersion(int* major, int* minor) {
  *major = SAGEJIT_STUB_VERSION;
  *minor = 0;
  return 0;
}
#endif
