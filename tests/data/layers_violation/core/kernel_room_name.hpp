#pragma once
#include "common/params.h"     // a kernel header that exists under kernel_src: allowed
#include "common/cli.hpp"      // named like the kernel room, but no kernel header: the check must fail
