# CUDA is optional: when nvcc exists (and SUBMOE_CUDA is ON) the CUDA kernels are
# compiled and linked into the library; the binary still runs without a GPU.
set(SUBMOE_HAVE_CUDA OFF)
if(SUBMOE_CUDA)
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    # H100/H200 (sm_90) natively, plus PTX for newer parts. A project variable,
    # because enable_language() caches nvcc's own default in
    # CMAKE_CUDA_ARCHITECTURES (52 or 75 depending on the CUDA version).
    set(SUBMOE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures of the submoe kernels")
    set(CMAKE_CUDA_ARCHITECTURES ${SUBMOE_CUDA_ARCHITECTURES})
    # C++17 for .cu files: CMake 3.25 (Debian 12) has no C++20 flag for nvcc, and
    # the headers shared with device code (bf16.h, ternary_dict_format.h,
    # kernels/cuda/ternary_dict_lane.h) need nothing newer.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(SUBMOE_HAVE_CUDA ON)
    message(STATUS "submoe: CUDA kernels enabled (${CMAKE_CUDA_COMPILER}, arch ${CMAKE_CUDA_ARCHITECTURES})")
  else()
    message(STATUS "submoe: nvcc not found, CUDA kernels disabled")
  endif()
endif()
