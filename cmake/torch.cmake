# Finds LibTorch and says what it can do. Sets BATON_CUDA (the LibTorch has CUDA), BATON_TORCH_WHEEL
# (it is a PyTorch wheel's) and, with CUDA, NCCL_FOUND and the target baton_nccl.
#
# Two LibTorches build the same tree (docs/building.md):
#   Debian's libtorch-dev (1.13, CPU)           found in the system folders (the default build)
#   a PyTorch wheel's (2.x, CUDA)               -DCMAKE_PREFIX_PATH=<site-packages>/torch/share/cmake

# A wheel's TorchConfig looks some libraries up by name with its own folder as a last resort, so on a
# machine that also has Debian's LibTorch it would link Debian's libc10 beside the wheel's libtorch.
# The wheel's torch folder as a prefix of its own puts its lib/ first.
foreach(prefix IN LISTS CMAKE_PREFIX_PATH)
  if(prefix MATCHES "/torch/share/cmake/?$" AND EXISTS "${prefix}/../../lib")
    get_filename_component(torch_root "${prefix}/../.." ABSOLUTE)
    list(PREPEND CMAKE_PREFIX_PATH "${torch_root}")
  endif()
endforeach()

# A CUDA LibTorch otherwise compiles and runs a program that asks the GPU for its architecture,
# which fails on a machine without one. baton compiles no device code: any list will do.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;9.0")
endif()

find_package(Torch REQUIRED)
message(STATUS "LibTorch ${Torch_VERSION} in ${TORCH_INSTALL_PREFIX}")
if(TORCH_INSTALL_PREFIX MATCHES "-packages/torch/?$")
  set(BATON_TORCH_WHEEL ON)
else()
  set(BATON_TORCH_WHEEL OFF)
endif()
# A PyTorch 2.x wheel's libtorch.so exports its own copy of std::filesystem (remove_all,
# create_directory, ...) whose remove_all calls recursive_directory_iterator through weak references
# the system's libstdc++ does not define: a program that looks libtorch.so up before libstdc++.so.6
# jumps to address 0 removing a folder that holds anything (seen on an H200: each gpu test that
# removed its run folder). libstdc++.so.6 first among every binary's libraries makes its definitions
# the ones found here (Debian's GCC 12) but not on the H200's toolchain (GCC 13.3, 2026-11-30), so
# baton itself calls baton::remove_tree (baton/io/file.h) instead. The `baton` target passes the
# option on to users' programs (CMakeLists.txt).
if(BATON_TORCH_WHEEL)
  add_link_options("LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
endif()

if(TARGET torch_cuda)
  set(BATON_CUDA ON)
  message(STATUS "LibTorch has CUDA: src/cuda is compiled (devices, streams, memory, NCCL)")
else()
  set(BATON_CUDA OFF)
endif()

# LibTorch 2.x carries its own (newer) fmt headers in its include folder, which comes before the
# system's; spdlog is built against the system's fmt. A folder that holds only the system's fmt,
# searched first, keeps the two apart.
if(EXISTS "${TORCH_INSTALL_PREFIX}/include/fmt")
  find_package(fmt REQUIRED)
  get_target_property(fmt_include_dirs fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
  find_path(BATON_SYSTEM_FMT_DIR fmt/format.h PATHS ${fmt_include_dirs} NO_DEFAULT_PATH)
  if(NOT BATON_SYSTEM_FMT_DIR)
    set(BATON_SYSTEM_FMT_DIR /usr/include)
  endif()
  set(fmt_shim ${CMAKE_BINARY_DIR}/system-fmt)
  file(MAKE_DIRECTORY ${fmt_shim})
  file(CREATE_LINK ${BATON_SYSTEM_FMT_DIR}/fmt ${fmt_shim}/fmt SYMBOLIC)
  include_directories(BEFORE ${fmt_shim})
endif()

# NCCL for data parallelism on GPUs: NCCL_ROOT's, else the one inside a PyTorch wheel
# (site-packages/nvidia/nccl: the libnccl.so.2 LibTorch itself loads, and its header), else the CUDA
# toolkit's.
set(NCCL_FOUND OFF)
if(BATON_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h
    HINTS $ENV{NCCL_ROOT}/include ${TORCH_INSTALL_PREFIX}/../nvidia/nccl/include ${CUDAToolkit_INCLUDE_DIRS})
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR
    HINTS $ENV{NCCL_ROOT}/lib ${TORCH_INSTALL_PREFIX}/../nvidia/nccl/lib ${CUDAToolkit_LIBRARY_DIR})
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(NCCL_FOUND ON)
    add_library(baton_nccl INTERFACE)
    target_include_directories(baton_nccl INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(baton_nccl INTERFACE ${NCCL_LIBRARY})
  endif()
endif()
