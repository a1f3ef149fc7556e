# What `cmake --install` puts where. Two sets of rules share the targets:
#
# - the normal install (`cmake --install build --prefix P`): public headers under
#   P/include/tritium, libtritium.so, libtritium_kernels.a and libtritium_kernels_c.so under
#   P/lib, the tools under P/bin, the CMake package (find_package(tritium CONFIG): targets
#   tritium::tritium, tritium::kernels, tritium::kernels_c and the tools) under
#   P/lib/cmake/tritium, and tritium.pc / tritium-kernels.pc under P/lib/pkgconfig;
# - the component device_bundle, left out of a normal install: one flat folder of binaries that
#   find libtritium.so beside them, tests included, which tools/build-device-bundle.sh makes for
#   the GPU machine (docs/DEVICE.md).
#
# docs/INSTALL.md explains the choices (shared libtritium with LLVM private, what is exported).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TRITIUM_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/tritium")

# --- Headers -----------------------------------------------------------------------------------
# The public headers: frontend/Tritium.h and everything it includes, the runtime headers a
# launch needs (buffers, streams, the persistent grid), and the kernel library's. They include
# each other as "frontend/DSL.h", so P/include/tritium is on the include path; P/include is too,
# so that a program may write <tritium/frontend/Tritium.h>. None of them includes LLVM, spdlog
# or fmt; the tests/consumer build compiles all of them in one translation unit against the
# installed tree, which catches a header that includes one left out here.
set(TRITIUM_PUBLIC_HEADERS
  frontend/Tritium.h frontend/DSL.h frontend/Kernel.h frontend/CompiledKernel.h frontend/Limits.h
  frontend/TypedArguments.h
  compiler/Pipeline.h compiler/codegen/OptimizeLLVM.h compiler/ir/IR.h compiler/ir/Layout.h
  compiler/ir/Printer.h compiler/ir/Types.h compiler/ir/Ops.def compiler/ir/MathFunctions.def
  compiler/ir/TensorMap.h
  compiler/support/Error.h
  interpreter/Interpreter.h interpreter/Memory.h
  runtime/Device.h runtime/Driver.h runtime/Memory.h runtime/Module.h runtime/Grid.h
  runtime/PerContext.h
  kernels/capi/tritium_kernels.h aot/Aot.h)
file(GLOB TRITIUM_KERNEL_HEADERS RELATIVE "${PROJECT_SOURCE_DIR}" CONFIGURE_DEPENDS
  "${PROJECT_SOURCE_DIR}/kernels/*.h")
foreach(header IN LISTS TRITIUM_PUBLIC_HEADERS TRITIUM_KERNEL_HEADERS)
  get_filename_component(dir "${header}" DIRECTORY)
  install(FILES "${PROJECT_SOURCE_DIR}/${header}"
    DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/tritium/${dir}")
endforeach()

target_include_directories(tritium INTERFACE
  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/tritium>"
  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
# The C interface's header, for C callers of tritium::kernels_c (which needs nothing else).
target_include_directories(tritium_kernels_c INTERFACE
  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/tritium>"
  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
# The headers need C++20 (std::source_location, designated initializers): consumers get it.
target_compile_features(tritium INTERFACE cxx_std_20)

# --- Libraries and tools -----------------------------------------------------------------------
# Run paths: libraries find each other beside them ($ORIGIN); executables find libtritium.so
# beside them (the flat bundle) or in ../lib (the normal install). libLLVM.so.22.1 of a
# non-static build is found in the system's library path (Debian's libllvm22).
file(RELATIVE_PATH TRITIUM_BIN_TO_LIB "${CMAKE_INSTALL_FULL_BINDIR}" "${CMAKE_INSTALL_FULL_LIBDIR}")
set(TRITIUM_INSTALLED_TOOLS tritiumc tritium-opt bench_softmax)
set_target_properties(tritium tritium_kernels_c PROPERTIES INSTALL_RPATH "$ORIGIN")
set_target_properties(fused_softmax transformer_block bench_kernel_first_calls stress_gpus
  ${TRITIUM_INSTALLED_TOOLS} PROPERTIES
  INSTALL_RPATH "$ORIGIN;$ORIGIN/${TRITIUM_BIN_TO_LIB}")
set_target_properties(tritium PROPERTIES EXPORT_NAME tritium)
set_target_properties(tritium_kernels PROPERTIES EXPORT_NAME kernels)
set_target_properties(tritium_kernels_c PROPERTIES EXPORT_NAME kernels_c)

install(TARGETS tritium tritium_kernels tritium_kernels_c ${TRITIUM_INSTALLED_TOOLS}
  EXPORT tritiumTargets
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")

# --- CMake package -----------------------------------------------------------------------------
install(EXPORT tritiumTargets NAMESPACE tritium:: DESTINATION "${TRITIUM_CMAKE_DIR}")
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/tritiumConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/install/tritiumConfig.cmake"
  INSTALL_DESTINATION "${TRITIUM_CMAKE_DIR}")
# SameMinorVersion: before 1.0 a minor release may change the C++ API and ABI (the public
# headers hold class layouts and templates), a patch release may not; docs/INSTALL.md.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/install/tritiumConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/install/tritiumConfig.cmake"
  "${PROJECT_BINARY_DIR}/install/tritiumConfigVersion.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/TritiumAot.cmake"
  DESTINATION "${TRITIUM_CMAKE_DIR}")

# --- pkg-config --------------------------------------------------------------------------------
# The prefix is found from the .pc file's own place (${pcfiledir}), so an installed tree may be
# moved; cuda.h's folder is the one this build used.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(TRITIUM_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH TRITIUM_PC_UP "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" TRITIUM_PC_UP "${TRITIUM_PC_UP}")
  set(TRITIUM_PC_PREFIX "\${pcfiledir}/${TRITIUM_PC_UP}")
endif()
foreach(pc tritium tritium-kernels)
  configure_file("${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in" "${PROJECT_BINARY_DIR}/install/${pc}.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/install/${pc}.pc"
    DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endforeach()

# --- The GPU machine's bundle ------------------------------------------------------------------
# `cmake --install <build> --component device_bundle --prefix <dir> --strip` gives one flat
# folder of stripped binaries that find libtritium.so beside them: the bundle carried to the
# GPU machine (tools/build-device-bundle.sh, docs/DEVICE.md). A normal install leaves it out.
set(TRITIUM_BUNDLE tritium tritium_kernels_c fused_softmax transformer_block matmul attention tritiumc tritium-opt
  bench_softmax bench_kernel_first_calls stress_gpus bench_scan)
if(TARGET tritium_tests)
  set_target_properties(tritium_tests random_programs PROPERTIES INSTALL_RPATH "$ORIGIN")
  list(APPEND TRITIUM_BUNDLE tritium_tests random_programs)
endif()
# The ahead-of-time consumer needs only libcuda: run it on the GPU machine to check AOT launchers.
if(TARGET aot_consumer)
  list(APPEND TRITIUM_BUNDLE aot_consumer)
endif()
# (COMPONENT and EXCLUDE_FROM_ALL apply to the artifact kind they follow: both kinds need them.)
install(TARGETS ${TRITIUM_BUNDLE}
  LIBRARY DESTINATION . COMPONENT device_bundle EXCLUDE_FROM_ALL
  RUNTIME DESTINATION . COMPONENT device_bundle EXCLUDE_FROM_ALL)
