#pragma once
#include "plan/attention_plan.hpp"  // core reaching up into plan: the check must fail
