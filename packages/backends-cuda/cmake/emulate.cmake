# The CPU emulation build (LAMINA_CUDA_EMULATE=ON), included by CMakeLists.txt.
#
# HIP-CPU is found through the cache entry LAMINA_HIP_CPU_DIR, else the
# environment variable of the same name, else ../shared/tools/hip-cpu beside
# the checkout. TBB (HIP-CPU runs a grid with the C++17 parallel algorithms,
# which libstdc++ builds on TBB) comes from CMAKE_PREFIX_PATH or from the
# Python environment the build runs in (`pip install tbb-devel` puts its CMake
# package there). The .cu files are compiled as C++ at -O1: the build is a
# correctness oracle, and HIP-CPU's templates make every file slow to compile.
set(_default_hip_cpu "${CMAKE_CURRENT_SOURCE_DIR}/../../../shared/tools/hip-cpu")
if(DEFINED ENV{LAMINA_HIP_CPU_DIR} AND NOT "$ENV{LAMINA_HIP_CPU_DIR}" STREQUAL "")
  set(_default_hip_cpu "$ENV{LAMINA_HIP_CPU_DIR}")
endif()
set(LAMINA_HIP_CPU_DIR "${_default_hip_cpu}" CACHE PATH "HIP-CPU checkout (has include/hip/hip_runtime.h)")
get_filename_component(LAMINA_HIP_CPU_DIR "${LAMINA_HIP_CPU_DIR}" ABSOLUTE)
if(NOT EXISTS "${LAMINA_HIP_CPU_DIR}/include/hip/hip_runtime.h")
  message(FATAL_ERROR "LAMINA_CUDA_EMULATE: HIP-CPU not found at ${LAMINA_HIP_CPU_DIR}; "
                      "set LAMINA_HIP_CPU_DIR (environment or -D) to a HIP-CPU checkout")
endif()

execute_process(COMMAND "${Python_EXECUTABLE}" -c "import sys; print(sys.prefix)"
                OUTPUT_VARIABLE _py_prefix OUTPUT_STRIP_TRAILING_WHITESPACE)
find_package(TBB CONFIG HINTS "${_py_prefix}" "${_py_prefix}/lib/cmake/tbb")
if(NOT TBB_FOUND)
  message(FATAL_ERROR "LAMINA_CUDA_EMULATE: TBB's CMake package was not found in ${_py_prefix} "
                      "or CMAKE_PREFIX_PATH: `pip install tbb-devel` into the environment and "
                      "build with --no-build-isolation, or set TBB_ROOT")
endif()
message(STATUS "LAMINA_CUDA_EMULATE: HIP-CPU at ${LAMINA_HIP_CPU_DIR}, TBB ${TBB_VERSION}")

set_source_files_properties(${LAMINA_CUDA_SOURCES} PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "-xc++")
add_library(lamina_cuda_kernels STATIC csrc/device.cc csrc/allocator.cc ${LAMINA_CUDA_SOURCES})
target_include_directories(lamina_cuda_kernels PUBLIC csrc "${LAMINA_NDARRAY_INCLUDE}")
target_include_directories(lamina_cuda_kernels SYSTEM PUBLIC "${LAMINA_HIP_CPU_DIR}/include")
target_compile_definitions(lamina_cuda_kernels PUBLIC LAMINA_CUDA_EMULATE=1)
find_package(Threads REQUIRED)
target_link_libraries(lamina_cuda_kernels PUBLIC TBB::tbb Threads::Threads)
# -fno-strict-aliasing: the kernels read buffers through float4 and Pack<T, N>
# views, which CUDA allows and ISO C++ does not.
target_compile_options(lamina_cuda_kernels PRIVATE -O1 -fno-strict-aliasing -Wall -Wextra
                       -Wno-unused-parameter -Wno-unknown-pragmas)

pybind11_add_module(_core MODULE csrc/bindings.cc csrc/buffers.cc)
target_link_libraries(_core PRIVATE lamina_cuda_kernels)
target_compile_options(_core PRIVATE -O1 -Wall -Wextra)

if(LAMINA_SANITIZE)
  foreach(_t lamina_cuda_kernels _core)
    target_compile_options(${_t} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
  endforeach()
  target_link_options(_core PRIVATE -fsanitize=address,undefined)
endif()

# libtbb lives in the Python environment, not on the loader path.
get_target_property(_tbb_lib TBB::tbb LOCATION)
get_filename_component(_tbb_dir "${_tbb_lib}" DIRECTORY)
set_target_properties(_core PROPERTIES INSTALL_RPATH "${_tbb_dir}" BUILD_RPATH "${_tbb_dir}")

install(TARGETS _core LIBRARY DESTINATION lamina_backend_cuda)
