#pragma once
#include "compiler/compiler.hpp"  // a peer: the check must fail
