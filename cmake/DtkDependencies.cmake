# Finds everything dtk builds against (all Debian 12 packages; `make` installs them) and
# gathers them in one interface target, dtk_deps, that every dtk target links.
include_guard(GLOBAL)

find_package(MPI REQUIRED COMPONENTS CXX)
find_package(xtensor REQUIRED)
find_package(xtensor-blas REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(ZLIB REQUIRED)

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  # Optimised by default: the trainer's speed depends on it.
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

add_library(dtk_deps INTERFACE)
target_compile_features(dtk_deps INTERFACE cxx_std_17)
target_link_libraries(dtk_deps INTERFACE MPI::MPI_CXX xtensor xtensor-blas
                                         nlohmann_json::nlohmann_json ZLIB::ZLIB)
