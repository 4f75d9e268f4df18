#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "random_support.hpp"

// A failed test case that drew random data says how to replay it (SAGEJIT_TEST_SEED).
REGISTER_LISTENER("replay_seed", 1, sagejit::test::ReplaySeedListener);
