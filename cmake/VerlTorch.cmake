# LibTorch from the PyPI torch wheel: scripts/install-deps.sh installs the pinned torch into .venv/libtorch, and
# CMake finds it through torch.utils.cmake_prefix_path. Another installation: -DVERL_TORCH_PYTHON=/path/to/python
# (any Python whose `import torch` is a LibTorch 2.x).
#
# The wheel is a CUDA build, so TorchConfig.cmake looks for a CUDA toolkit (nvcc, cudart, CCCL). On a machine
# without one, the toolkit comes from PyPI too (cuda-toolkit[nvcc,...] in scripts/requirements/libtorch.txt,
# under site-packages/nvidia/cu13). Those wheels carry only versioned sonames (libcudart.so.13) and no driver
# stub, so a toolkit view is assembled in the build folder: the same bin/, include/ and nvvm/, and lib64/ with
# the unversioned names CMake's FindCUDA / FindCUDAToolkit search for. Nothing is installed system-wide.

set(VERL_TORCH_PYTHON "${PROJECT_SOURCE_DIR}/.venv/libtorch/bin/python" CACHE FILEPATH
    "The Python whose torch package provides LibTorch (scripts/install-deps.sh makes .venv/libtorch)")
if(NOT EXISTS "${VERL_TORCH_PYTHON}")
  message(FATAL_ERROR "verl: no LibTorch: ${VERL_TORCH_PYTHON} does not exist; run scripts/install-deps.sh "
                      "(or pass -DVERL_TORCH_PYTHON=<python with torch>)")
endif()
execute_process(
  COMMAND "${VERL_TORCH_PYTHON}" -c
          "import os, torch; print(torch.utils.cmake_prefix_path); print(torch.__version__); print(os.path.dirname(os.path.dirname(torch.__file__)))"
  OUTPUT_VARIABLE _verl_torch_out ERROR_VARIABLE _verl_torch_err RESULT_VARIABLE _verl_torch_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _verl_torch_rc EQUAL 0)
  message(FATAL_ERROR "verl: ${VERL_TORCH_PYTHON} cannot import torch: ${_verl_torch_err}")
endif()
string(REPLACE "\n" ";" _verl_torch_out "${_verl_torch_out}")
list(GET _verl_torch_out 0 VERL_TORCH_CMAKE_PREFIX)
list(GET _verl_torch_out 1 VERL_TORCH_PIP_VERSION)
list(GET _verl_torch_out 2 VERL_TORCH_SITE_PACKAGES)
if(VERL_TORCH_PIP_VERSION VERSION_LESS 2.0)
  message(FATAL_ERROR "verl: LibTorch ${VERL_TORCH_PIP_VERSION} from ${VERL_TORCH_PYTHON}: 2.x is required")
endif()
list(PREPEND CMAKE_PREFIX_PATH "${VERL_TORCH_CMAKE_PREFIX}")

# The toolkit view over the PyPI CUDA pieces (only when they are there; a machine with its own toolkit, e.g.
# /usr/local/cuda, is left to TorchConfig's usual search).
set(_verl_pip_cuda "${VERL_TORCH_SITE_PACKAGES}/nvidia/cu13")
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDA_HOME} AND EXISTS "${_verl_pip_cuda}/bin/nvcc")
  set(_view "${CMAKE_BINARY_DIR}/cuda-toolkit")
  file(MAKE_DIRECTORY "${_view}/lib64" "${_view}/bin")
  foreach(_dir include nvvm)
    file(CREATE_LINK "${_verl_pip_cuda}/${_dir}" "${_view}/${_dir}" SYMBOLIC)
  endforeach()
  # bin/ holds links to each file, not a link to the folder: nvcc finds lib64/ as <its folder>/../lib64.
  file(GLOB _verl_cuda_tools "${_verl_pip_cuda}/bin/*")
  foreach(_tool ${_verl_cuda_tools})
    get_filename_component(_name "${_tool}" NAME)
    file(CREATE_LINK "${_tool}" "${_view}/bin/${_name}" SYMBOLIC)
  endforeach()
  file(GLOB _verl_cuda_libs "${_verl_pip_cuda}/lib/lib*.so*" "${_verl_pip_cuda}/lib/lib*.a"
       "${VERL_TORCH_SITE_PACKAGES}/nvidia/*/lib/lib*.so*")
  foreach(_lib ${_verl_cuda_libs})
    get_filename_component(_name "${_lib}" NAME)
    file(CREATE_LINK "${_lib}" "${_view}/lib64/${_name}" SYMBOLIC)
    string(REGEX REPLACE "\\.so\\..*$" ".so" _unversioned "${_name}")
    if(NOT EXISTS "${_view}/lib64/${_unversioned}")
      file(CREATE_LINK "${_lib}" "${_view}/lib64/${_unversioned}" SYMBOLIC)
    endif()
  endforeach()
  set(CUDA_TOOLKIT_ROOT_DIR "${_view}" CACHE PATH "CUDA toolkit (view over the PyPI CUDA wheels)" FORCE)
  set(CUDAToolkit_ROOT "${_view}")
  set(CMAKE_CUDA_COMPILER "${_view}/bin/nvcc" CACHE FILEPATH "nvcc (from the PyPI CUDA wheels)" FORCE)
  set(CUDNN_ROOT "${VERL_TORCH_SITE_PACKAGES}/nvidia/cudnn")
  set(CUDNN_INCLUDE_DIR "${VERL_TORCH_SITE_PACKAGES}/nvidia/cudnn/include" CACHE PATH "" FORCE)
  set(CUDNN_LIBRARY "${_view}/lib64/libcudnn.so" CACHE FILEPATH "" FORCE)
endif()

# The CUDA driver (libcuda.so.1) comes with the GPU's driver, not with a toolkit: LibTorch opens it at run time,
# and verl.cpp calls no driver function, so nothing links it. An empty CUDA::cuda_driver stands in for the target
# TorchConfig names when the machine has no driver library to find (a CPU-only machine).
find_library(VERL_CUDA_DRIVER_LIBRARY cuda PATHS "${CUDA_TOOLKIT_ROOT_DIR}/lib64/stubs")
if(NOT VERL_CUDA_DRIVER_LIBRARY AND NOT TARGET CUDA::cuda_driver)
  add_library(CUDA::cuda_driver INTERFACE IMPORTED)
endif()

# TorchConfig finds libtorch / libc10 / libc10_cuda with find_library(... PATHS <its lib>), which searches the
# system folders first: with Debian's libtorch-dev also installed it would link that LibTorch's libc10 (1.13)
# beside the wheel's libtorch. Found here, in the wheel only (replacing a cached answer from elsewhere), the
# cached answers stand.
foreach(_verl_torch_lib torch c10 c10_cuda)
  string(TOUPPER "${_verl_torch_lib}" _upper)
  set(_var "${_verl_torch_lib}_LIBRARY")
  if(_verl_torch_lib STREQUAL "torch" OR _verl_torch_lib STREQUAL "c10_cuda")
    set(_var "${_upper}_LIBRARY")
  endif()
  if(DEFINED CACHE{${_var}} AND NOT "$CACHE{${_var}}" MATCHES "^${VERL_TORCH_SITE_PACKAGES}/")
    unset(${_var} CACHE)  # found elsewhere by an earlier configure
  endif()
  find_library(${_var} ${_verl_torch_lib} PATHS "${VERL_TORCH_SITE_PACKAGES}/torch/lib" NO_DEFAULT_PATH)
endforeach()

find_package(Torch REQUIRED)
foreach(_verl_torch_lib ${TORCH_LIBRARIES})
  if(_verl_torch_lib MATCHES "^/" AND _verl_torch_lib MATCHES "/lib(torch|c10|kineto)[^/]*$" AND
     NOT _verl_torch_lib MATCHES "^${VERL_TORCH_SITE_PACKAGES}/")
    message(FATAL_ERROR "verl: LibTorch library ${_verl_torch_lib} is not the one in ${VERL_TORCH_SITE_PACKAGES}; "
                        "remove the stale entry from CMakeCache.txt (or the build folder)")
  endif()
endforeach()
