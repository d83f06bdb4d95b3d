# A library per module: baton_<module> (libbaton_<module>.so) from src/<module>/*.cpp, linked to the
# modules its row of docs/architecture.md's table of layers names ("includes") and to nothing
# else of baton's, with no undefined symbol allowed (-z defs). A call into a module the row does not
# name then fails to link, as an include of one fails scripts/check-layering.sh: the table is the
# one place the layers are written, and both read it.
#
# In:  BATON_SOURCES_<module> (sources besides src/<module>/*.cpp, or instead of them for cuda),
#      BATON_LIBS_<module> (libraries its code calls, besides LibTorch and nlohmann_json).
# Out: BATON_MODULES (bottom up, as the table lists them), BATON_MODULE_TARGETS.

set(_table ${CMAKE_SOURCE_DIR}/docs/architecture.md)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_table})
file(READ ${_table} _text)
string(REPLACE ";" "," _text "${_text}")  # a cell's ';' would split CMake's list of lines
string(REPLACE "\n" ";" _lines "${_text}")
set(BATON_MODULES)
set(BATON_MODULE_TARGETS)
foreach(_line IN LISTS _lines)
  if(NOT _line MATCHES "^\\| `([a-z_]+)` \\|.*\\|([^|]*)\\|[ ]*$")
    continue()
  endif()
  set(_module ${CMAKE_MATCH_1})
  string(REGEX MATCHALL "`[a-z_]+`" _below "${CMAKE_MATCH_2}")
  string(REPLACE "`" "" _below "${_below}")
  foreach(_dep IN LISTS _below)
    if(NOT _dep IN_LIST BATON_MODULES)
      message(FATAL_ERROR "${_table}: module '${_module}' may include '${_dep}', which is not a row above "
                          "it (the table lists modules bottom up)")
    endif()
  endforeach()
  if(_module STREQUAL "cuda")  # cuda.cpp or none.cpp: the caller chooses
    set(_sources ${BATON_SOURCES_cuda})
  else()
    file(GLOB _sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${_module}/*.cpp)
    list(APPEND _sources ${BATON_SOURCES_${_module}})
  endif()
  if(NOT _sources)
    message(FATAL_ERROR "${_table}: module '${_module}' has no sources in src/${_module}/")
  endif()
  set(_target baton_${_module})
  # The module's code compiles as an object library of its own, which depends on no other module's
  # target: every module compiles at once (a shared library's dependents would otherwise wait for
  # its link), and only the link of each library follows the layers.
  add_library(${_target}_objects OBJECT ${_sources})
  set_target_properties(${_target}_objects PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${_target}_objects
    PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_BINARY_DIR}/include PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_features(${_target}_objects PUBLIC cxx_std_20)
  target_link_libraries(${_target}_objects PRIVATE torch nlohmann_json::nlohmann_json Threads::Threads
                                                   ${BATON_LIBS_${_module}} baton_warnings)
  baton_use_pch(${_target}_objects)
  if(BATON_UNITY_BUILD)
    set_target_properties(${_target}_objects PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
  endif()

  add_library(${_target} SHARED $<TARGET_OBJECTS:${_target}_objects>)
  # Installed, a library finds the modules beside it ($ORIGIN: a program's RUNPATH does not reach a
  # library's own dependencies) and a LibTorch outside the system's folders (a PyTorch wheel's, CUDA's).
  set_target_properties(${_target} PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                                              INSTALL_RPATH "$ORIGIN" INSTALL_RPATH_USE_LINK_PATH ON
                                              LINKER_LANGUAGE CXX)
  if(BATON_TORCH_WHEEL)
    set_property(TARGET ${_target} APPEND PROPERTY INSTALL_RPATH "${TORCH_INSTALL_PREFIX}/lib")
  endif()
  target_include_directories(${_target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include> $<BUILD_INTERFACE:${CMAKE_BINARY_DIR}/include>
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${_target} PUBLIC cxx_std_20)
  list(TRANSFORM _below PREPEND baton_)
  target_link_libraries(${_target} PUBLIC ${_below} torch nlohmann_json::nlohmann_json Threads::Threads
                                   PRIVATE ${BATON_LIBS_${_module}} baton_warnings)
  # Every symbol the module uses is defined by itself or by what it links: the layers, at link time.
  # (Not under a sanitizer: its runtime's symbols are resolved when a program loads.)
  if(NOT BATON_SANITIZE)
    target_link_options(${_target} PRIVATE -Wl,-z,defs)
  endif()
  if(BATON_PCH)
    # The precompiled header inlines spdlog/fmt calls: the library links them.
    target_link_libraries(${_target} PRIVATE spdlog::spdlog)
  endif()
  list(APPEND BATON_MODULES ${_module})
  list(APPEND BATON_MODULE_TARGETS ${_target})
endforeach()
if(NOT BATON_MODULES)
  message(FATAL_ERROR "${_table}: no rows in its table of layers (| `module` | what it owns | may include |)")
endif()
