# backend.cmake: the CUDA backend plugin, libaxon_cuda.so (included by the
# top CMakeLists.txt, as every src/backend/*/backend.cmake).

# The CUDA backend (src/backend/cuda): AUTO builds it when a CUDA compiler
# is found (on PATH, in CUDACXX, or at /usr/local/cuda/bin/nvcc), ON
# requires it, OFF leaves it out. Without it ax_net_create refuses devices.
set(AXON_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set_property(CACHE AXON_CUDA PROPERTY STRINGS AUTO ON OFF)
set(AXON_CUDA_ENABLED OFF)
if(NOT AXON_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    # CUDA's default install is not on PATH; check_language and
    # enable_language both read CUDACXX.
    set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # sm_80 (A100) and sm_90 (H100) as machine code, plus PTX of sm_90
      # that the driver compiles for newer GPUs.
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
    endif()
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(AXON_CUDA_ENABLED ON)
  elseif(AXON_CUDA STREQUAL "ON")
    message(FATAL_ERROR "AXON_CUDA=ON but no CUDA compiler was found (set CUDACXX or CMAKE_CUDA_COMPILER)")
  endif()
endif()
message(STATUS "axon: CUDA backend ${AXON_CUDA_ENABLED} (AXON_CUDA=${AXON_CUDA})")

if(AXON_CUDA_ENABLED)
  file(GLOB AXON_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backend/cuda/*.c
                                                ${PROJECT_SOURCE_DIR}/src/backend/cuda/*.cu)
  axon_add_backend_plugin(cuda ${AXON_CUDA_SOURCES})
  set_target_properties(axon_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  target_compile_options(axon_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
  # CI builds with AXON_WERROR: nvcc's own warnings and its host compiler's
  # are errors there too, as the C sources' are.
  if(AXON_WERROR)
    target_compile_options(axon_cuda PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
  # OpenMP: pinned_upload.c copies into its pinned buffers on every thread.
  target_link_libraries(axon_cuda PRIVATE CUDA::cudart CUDA::cublas OpenMP::OpenMP_C)
  target_compile_definitions(axon_cuda PRIVATE AXON_CUDA_VERSION="${CUDAToolkit_VERSION}")
endif()
