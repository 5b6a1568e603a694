# Every third-party library the project links, found once here. Debian packages are named in
# scripts/install-deps.sh. A CUDA LibTorch is picked up through CMAKE_PREFIX_PATH (see docs/building.md).

# Debian's python3-* packages belong to /usr/bin/python3, not to whatever python3 comes first on PATH.
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()

find_package(Torch REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Embed)
find_package(pybind11 CONFIG REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(SNAPPY REQUIRED IMPORTED_TARGET snappy)
find_package(Threads REQUIRED)

# yaml-cpp's exported target name changed across versions.
if(TARGET yaml-cpp::yaml-cpp)
  set(VERL_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(VERL_YAML_TARGET yaml-cpp)
endif()

set(VERL_DEPENDENCY_TARGETS
    ${TORCH_LIBRARIES} ${VERL_YAML_TARGET} nlohmann_json::nlohmann_json
    pybind11::embed MPI::MPI_CXX ZLIB::ZLIB
    PkgConfig::PCRE2 PkgConfig::UTF8PROC PkgConfig::ZSTD PkgConfig::SNAPPY Threads::Threads)

# LibTorch's own flags (e.g. the _GLIBCXX_USE_CXX11_ABI setting of a pip LibTorch).
if(TORCH_CXX_FLAGS)
  separate_arguments(_verl_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  add_compile_options(${_verl_torch_flags})
endif()

set(VERL_HAS_CUDA OFF)
if(TARGET torch_cuda OR CUDA_FOUND OR TORCH_CUDA_LIBRARIES)
  set(VERL_HAS_CUDA ON)
endif()
message(STATUS "verl: LibTorch ${Torch_VERSION} at ${TORCH_INSTALL_PREFIX} (CUDA: ${VERL_HAS_CUDA})")
