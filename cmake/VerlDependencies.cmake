# Every third-party library the project links, found once here. Debian packages are named in
# scripts/install-deps.sh; LibTorch (the PyPI torch wheel in .venv/libtorch) is found by VerlTorch.cmake.

# Debian's python3-* packages belong to /usr/bin/python3, not to whatever python3 comes first on PATH.
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()

include(VerlTorch)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
# The embedded CPython (chat templates, Python rewards): Debian's python3-dev gives Python.h and libpython;
# pybind11's headers come with LibTorch (torch/include/pybind11, 3.0), which precede the system include paths.
find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Embed)
# The embedded interpreter is pinned to the installation it is built against (its sys.base_prefix): at run
# time CPython would otherwise derive its prefix from the first python3 on PATH (a venv, pyenv, conda) and miss
# this installation's packages (jinja2).
execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import sys; print(sys.base_prefix, end='')"
                OUTPUT_VARIABLE VERL_EMBEDDED_PYTHON_HOME RESULT_VARIABLE _verl_python_rc)
if(NOT _verl_python_rc EQUAL 0 OR NOT IS_DIRECTORY "${VERL_EMBEDDED_PYTHON_HOME}")
  message(FATAL_ERROR "verl: cannot read sys.base_prefix of ${Python3_EXECUTABLE}")
endif()
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(SNAPPY REQUIRED IMPORTED_TARGET snappy)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
pkg_check_modules(BROTLIDEC REQUIRED IMPORTED_TARGET libbrotlidec)
find_package(Threads REQUIRED)

# yaml-cpp's exported target name changed across versions.
if(TARGET yaml-cpp::yaml-cpp)
  set(VERL_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(VERL_YAML_TARGET yaml-cpp)
endif()

set(VERL_DEPENDENCY_TARGETS
    ${TORCH_LIBRARIES} ${VERL_YAML_TARGET} nlohmann_json::nlohmann_json
    Python3::Python MPI::MPI_CXX ZLIB::ZLIB
    PkgConfig::PCRE2 PkgConfig::UTF8PROC PkgConfig::ZSTD PkgConfig::SNAPPY PkgConfig::LZ4 PkgConfig::BROTLIDEC Threads::Threads)

# LibTorch's own flags (e.g. the _GLIBCXX_USE_CXX11_ABI setting of a pip LibTorch).
if(TORCH_CXX_FLAGS)
  separate_arguments(_verl_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  add_compile_options(${_verl_torch_flags})
endif()

set(VERL_HAS_CUDA OFF)
if(TARGET torch_cuda OR CUDA_FOUND OR TORCH_CUDA_LIBRARIES)
  set(VERL_HAS_CUDA ON)
endif()
message(STATUS "verl: LibTorch ${VERL_TORCH_PIP_VERSION} at ${TORCH_INSTALL_PREFIX} (CUDA: ${VERL_HAS_CUDA}); "
               "embedded Python ${Python3_VERSION} at ${VERL_EMBEDDED_PYTHON_HOME}")
