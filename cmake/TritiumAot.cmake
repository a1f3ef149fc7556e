# tritium_add_aot_kernels: ahead-of-time kernels of your own DSL code in your build.
#
#   add_executable(my_aot_generator generator.cpp)         # calls tritium::aot::generate and
#   target_link_libraries(my_aot_generator PRIVATE tritium::tritium)   # writeFiles(argv[1])
#   add_executable(app main.cpp)
#   tritium_add_aot_kernels(app GENERATOR my_aot_generator NAMES softmax_fp32)
#   target_link_libraries(app PRIVATE CUDA::cuda_driver)  # app itself needs only libcuda
#
# At build time the generator runs with the output folder as its first argument (then ARGS) and
# must write <name>.h and <name>.cpp there for every NAMES entry; the .cpp files are added to the
# target and the folder to its include path. A DSL kernel is C++ code, which is why a program of
# yours generates them rather than a command-line tool (docs/AOT.md). The generator needs ptxas:
# TRITIUM_PTXAS, PATH or /usr/local/cuda/bin (set ENV TRITIUM_PTXAS with ENVIRONMENT).
function(tritium_add_aot_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 AOT "" "GENERATOR;OUTPUT_DIR" "NAMES;ARGS;ENVIRONMENT")
  if(NOT AOT_GENERATOR OR NOT AOT_NAMES)
    message(FATAL_ERROR "tritium_add_aot_kernels(${target}): give GENERATOR <executable target> "
                        "and NAMES <file base name>...")
  endif()
  if(NOT AOT_OUTPUT_DIR)
    set(AOT_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/${target}_aot")
  endif()
  set(outputs)
  set(sources)
  foreach(name IN LISTS AOT_NAMES)
    list(APPEND outputs "${AOT_OUTPUT_DIR}/${name}.h" "${AOT_OUTPUT_DIR}/${name}.cpp")
    list(APPEND sources "${AOT_OUTPUT_DIR}/${name}.cpp")
  endforeach()
  add_custom_command(OUTPUT ${outputs}
    COMMAND "${CMAKE_COMMAND}" -E env ${AOT_ENVIRONMENT}
      "$<TARGET_FILE:${AOT_GENERATOR}>" "${AOT_OUTPUT_DIR}" ${AOT_ARGS}
    DEPENDS ${AOT_GENERATOR}
    COMMENT "Generating ahead-of-time kernels ${AOT_NAMES} with ${AOT_GENERATOR}"
    VERBATIM)
  target_sources(${target} PRIVATE ${sources})
  target_include_directories(${target} PRIVATE "${AOT_OUTPUT_DIR}")
  # The generated files include <cuda.h>; the folder tritium found it in, if the target has none.
  if(TRITIUM_CUDA_INCLUDE_DIR)
    target_include_directories(${target} SYSTEM PRIVATE "${TRITIUM_CUDA_INCLUDE_DIR}")
  endif()
endfunction()
