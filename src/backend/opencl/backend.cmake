# backend.cmake: the OpenCL backend plugin, libaxon_opencl.so (included by
# the top CMakeLists.txt, as every src/backend/*/backend.cmake).

# test_opencl_peak checks opencl_peak.c, a file without OpenCL calls,
# compiled into the test on every build (tests/CMakeLists.txt).
set(AXON_TEST_EXTRA_SOURCES_test_opencl_peak ${PROJECT_SOURCE_DIR}/src/backend/opencl/opencl_peak.c)

# The OpenCL backend (src/backend/opencl): OpenCL C kernels, GEMMs through
# CLBlast (Debian: ocl-icd-opencl-dev opencl-c-headers libclblast-dev; PoCL,
# pocl-opencl-icd, runs it on the CPU). AUTO builds it when the headers, the
# ICD loader and CLBlast are found, ON requires them, OFF leaves it out. Only
# the plugin links OpenCL; its kernel sources (*.cl) are compiled into it as
# strings (cmake/embed_text.cmake).
set(AXON_OPENCL "AUTO" CACHE STRING "Build the OpenCL backend: AUTO, ON or OFF")
set_property(CACHE AXON_OPENCL PROPERTY STRINGS AUTO ON OFF)
set(AXON_OPENCL_ENABLED OFF)
if(NOT AXON_OPENCL STREQUAL "OFF")
  find_package(OpenCL QUIET)
  find_package(CLBlast QUIET CONFIG)
  if(OpenCL_FOUND AND CLBlast_FOUND)
    set(AXON_OPENCL_ENABLED ON)
  elseif(AXON_OPENCL STREQUAL "ON")
    message(FATAL_ERROR "AXON_OPENCL=ON but OpenCL (headers and ICD loader: found=${OpenCL_FOUND}) "
                        "or CLBlast (found=${CLBlast_FOUND}) is missing: apt-get install "
                        "ocl-icd-opencl-dev opencl-c-headers libclblast-dev")
  endif()
endif()
message(STATUS "axon: OpenCL backend ${AXON_OPENCL_ENABLED} (AXON_OPENCL=${AXON_OPENCL})")
if(AXON_OPENCL_ENABLED)
  file(GLOB AXON_OPENCL_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backend/opencl/*.c)
  file(GLOB AXON_OPENCL_KERNELS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backend/opencl/*.cl)
  set(axon_opencl_headers "")
  foreach(kernel_file ${AXON_OPENCL_KERNELS})
    get_filename_component(kernel_name ${kernel_file} NAME_WE)
    set(header ${PROJECT_BINARY_DIR}/opencl_kernels/${kernel_name}_cl.h)
    add_custom_command(OUTPUT ${header}
      COMMAND ${CMAKE_COMMAND} -DINPUT=${kernel_file} -DOUTPUT=${header}
              -DNAME=ax_opencl_source_${kernel_name} -P ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
      DEPENDS ${kernel_file} ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
      COMMENT "Embedding OpenCL kernels ${kernel_name}.cl")
    list(APPEND axon_opencl_headers ${header})
  endforeach()
  axon_add_backend_plugin(opencl ${AXON_OPENCL_SOURCES} ${axon_opencl_headers})
  target_include_directories(axon_opencl PRIVATE ${PROJECT_BINARY_DIR}/opencl_kernels)
  target_compile_definitions(axon_opencl PRIVATE CL_TARGET_OPENCL_VERSION=120)
  target_link_libraries(axon_opencl PRIVATE OpenCL::OpenCL clblast Threads::Threads m)
endif()
