# sagejit_embed_files(<output.cpp> <symbol> <base_dir> <files...>)
# Generates a C++ file with a table {relative path, contents} of every file, regenerated when a file
# changes. The runtime renders kernels from this table, so no file is needed at run time.
function(sagejit_embed_files output symbol base_dir)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${output} -DSYMBOL=${symbol} -DBASE_DIR=${base_dir}
            "-DFILES=${ARGN}" -P ${PROJECT_SOURCE_DIR}/cmake/embed_files_script.cmake
    DEPENDS ${ARGN} ${PROJECT_SOURCE_DIR}/cmake/embed_files_script.cmake
    COMMENT "Embedding ${symbol}"
    VERBATIM)
endfunction()
