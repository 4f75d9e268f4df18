# The layer check (tools/scripts/check_layers.py, docs/ARCHITECTURE.md "Layers"): the runtime's
# includes only point downward; and the check does fail on a tree that breaks the rule (a kernel
# header is allowed only when it is a file under kernel_src, so a "common/..." that is not fails).
find_program(SAGEJIT_PYTHON3 python3 REQUIRED)
add_test(NAME test_layers COMMAND ${SAGEJIT_PYTHON3} ${PROJECT_SOURCE_DIR}/tools/scripts/check_layers.py
                                  ${PROJECT_SOURCE_DIR}/runtime/src ${PROJECT_SOURCE_DIR}/kernel_src)
add_test(NAME test_layers_detects_violations
         COMMAND ${SAGEJIT_PYTHON3} ${PROJECT_SOURCE_DIR}/tools/scripts/check_layers.py
                 ${CMAKE_CURRENT_SOURCE_DIR}/data/layers_violation ${PROJECT_SOURCE_DIR}/kernel_src)
set_tests_properties(test_layers test_layers_detects_violations PROPERTIES LABELS cpu TIMEOUT 60)
set_tests_properties(test_layers_detects_violations PROPERTIES
  PASS_REGULAR_EXPRESSION "kernel_room_name.hpp:3: \"common/cli.hpp\" is in no known layer.*core \\(layer 0\\) includes \"plan/attention_plan.hpp\".*device includes its peer compiler.*3 problem")
